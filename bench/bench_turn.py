"""Per-turn overhead in a long-lived backend.

A real ``tandem serve`` (`bench/turn_probe.py`: the real server with timers
around a few functions) driven over its EPC socket as Emacs drives it; a
session whose journal already holds 996 turns, written with the store's own
writer (`tandem.store.journal.Journal.append` of `bench_projection.turn_entries`,
one ``sync`` at the end: ~1 s); a 20k-file workspace (`bench_checkpoints.generate`)
whose first checkpoint is taken before the backend starts; and the fake
OpenAI server answering at once ("ok", one delta). Three warm-up turns
(997–999: the backend parses the journal once), then RUNS turns from turn
1,000 on, each timed from the ``turns/send`` call to the ``turn-ended``
event, minus the fake's own time for that request (its handler's wall, in
this process). Two series: ten files changed before each turn (six edits, two
new files, a deletion, a chmod: what the pre-turn checkpoint then captures),
and no change.

Figure: the median; target 30 ms plus the turn's two incremental checkpoints
(median of before + after, measured in the backend), and beside it
``outside_checkpoints_ms``, the median over the turns of each turn's overhead
minus its own two checkpoints (against the 30 ms); anchor: one bare
``httpx`` streaming request to the same fake, same run (and, as
``bare_request_same_body_ms``, the same request carrying the body tandem sent
at the last turn: the whole context, as a stateless chat API needs it; and that
minus the fake's own time, ``…_beyond_the_fake_ms``, which is what the split's
"provider call beyond the fake" compares with). The split (medians per
part, from the backend's timers) is printed in the same line: projection,
compaction check, checkpoint before / after, journal writes (append and
fsync), events (publishing; the pusher then waits up to 16 ms to batch), the
provider call beyond the fake's own time, and the rest.
Run: ``.venv/bin/python bench/bench_turn.py [--files N] [--runs N] [--profile]``.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "python" / "server"))

import httpx  # noqa: E402
from epc_peer import Peer, start_backend  # noqa: E402
from fakes.http_base import FakeHandler  # noqa: E402
from fakes.openai_server import FakeOpenAI, OpenAIHandler  # noqa: E402
from fakes.script import Reply, Script  # noqa: E402

from bench_checkpoints import change_ten, generate  # noqa: E402
from bench_projection import turn_entries  # noqa: E402
from tandem.checkpoints import Checkpointer  # noqa: E402
from tandem.protocol.sexp import Symbol  # noqa: E402
from tandem.store.journal import Journal  # noqa: E402

TOKEN = "bench-turn-token"
PRE_TURNS = 996
WARM_UP = 3
TARGET_MS = 30.0
PARTS = ("projection", "compaction check", "checkpoint before", "checkpoint after",
         "journal writes", "events", "provider call beyond the fake")


class TimedHandler(OpenAIHandler):
    """The fake OpenAI handler, recording its own wall time per request."""

    times: list[float] = []
    edit: Callable[[], None] | None = None
    """The model's edits of this turn, made before the answer (part of the fake's time)."""

    def _dispatch(self) -> None:
        t = time.perf_counter()
        try:
            if TimedHandler.edit is not None:
                TimedHandler.edit()
            FakeHandler._dispatch(self)
        finally:
            TimedHandler.times.append((time.perf_counter() - t) * 1000)

    do_POST = _dispatch  # noqa: N815


class TimedFake(FakeOpenAI):
    """`FakeOpenAI` with `TimedHandler`."""

    handler = TimedHandler


def build_session(home: Path, root: Path) -> Journal:
    """A journal of PRE_TURNS chat turns, written by the store's own writer (closed)."""
    journal = Journal.create(home, str(root), title="bench turn")
    for n in range(1, PRE_TURNS + 1):
        for entry in turn_entries(n, directive=False):
            journal.append(entry)
    journal.sync()
    journal.close()  # the backend takes the session's lock
    return journal


class Client:
    """The EPC side of Emacs: calls, and the event batches it acknowledges."""

    def __init__(self, port: int) -> None:
        self.peer = Peer(port)

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """Call METHOD; return its value (event batches meanwhile are acknowledged)."""
        uid = self.peer.call(method, params)
        while True:
            msg = self.peer.recv()
            if msg[0] == "call":
                self._ack(msg)
            elif msg[1] == uid:
                if msg[0] != "return":
                    raise RuntimeError(f"{method}: {msg}")
                return msg[2]

    def _ack(self, msg: list[Any]) -> list[dict[str, Any]]:
        self.peer.send([Symbol("return"), msg[1], None])
        return list(msg[3][0]) if msg[2] == "tandem--events" else []

    def turn(self, session: str) -> tuple[int, float, list[str]]:
        """Send one chat turn; wait for its ``turn-ended``: (turn, ms, files changed)."""
        t = time.perf_counter()
        # No provider, as `tandem-send' sends it: the session's choice, else the default.
        uid = self.peer.call("turns/send", {"session": session, "text": "go on"})
        turn = None
        while True:
            msg = self.peer.recv()
            if msg[0] == "call":
                for event in self._ack(msg):
                    payload = event.get("payload") or event
                    if event.get("kind") == "turn-ended" and payload.get("turn") == turn:
                        if payload.get("outcome") != "succeeded":
                            raise RuntimeError(f"turn {turn}: {payload}")
                        return turn, (time.perf_counter() - t) * 1000, list(
                            payload.get("files_changed") or [])
            elif msg[1] == uid:
                if msg[0] != "return":
                    raise RuntimeError(f"turns/send: {msg}")
                turn = msg[2]["turn"]


def bare_request_ms(fake: FakeOpenAI, runs: int, body: Any = None) -> tuple[float, float]:
    """The anchor: one bare httpx streaming request to the same fake, of BODY (default:
    one short message): the median wall, and the median wall minus the fake's own
    time for it (what the provider figure is: the body's sending and the stream)."""
    body = body or {"model": "bench", "stream": True,
                    "messages": [{"role": "user", "content": "go"}]}
    times, beyond = [], []
    with httpx.Client() as client:  # kept, as a provider keeps its client
        for _ in range(runs):
            TimedHandler.times.clear()
            t = time.perf_counter()
            with client.stream("POST", fake.base_url + "/v1/chat/completions", json=body) as r:
                for _line in r.iter_lines():
                    pass
            times.append((time.perf_counter() - t) * 1000)
            beyond.append(times[-1] - sum(TimedHandler.times))
    return statistics.median(times), statistics.median(beyond)


def series(client: Client, session: str, turns: list[dict[str, float]], root: Path,
           live: list[Path], runs: int, changed: bool) -> list[dict[str, float]]:
    """RUNS timed turns; each the client's wall, the fake's time and the backend's split."""
    out = []
    for n in range(runs):
        TimedHandler.edit = None
        if changed:
            def edit(n: int = n) -> None:
                change_ten(root, live, random.Random(7000 + n), 7000 + n)

            TimedHandler.edit = edit
        TimedHandler.times.clear()
        turn, wall, files = client.turn(session)
        TimedHandler.edit = None
        if changed:
            live[:] = [p for p in live if p.exists()]  # one was deleted
        fake = sum(TimedHandler.times)
        out.append({"turn": turn, "wall": wall, "fake": fake, "files": len(files),
                    "index": len(turns)})
    return out


def split(rows: list[dict[str, float]], probe: list[dict[str, float]]) -> dict[str, float]:
    """Median milliseconds per part of ROWS' turns, from the backend's timers."""
    by_turn = {int(p["turn"]): p for p in probe}
    parts: dict[str, list[float]] = {k: [] for k in (*PARTS, "rest", "transport")}
    for row in rows:
        p = by_turn[int(row["turn"])]
        provider = p.get("provider call", 0.0) - row["fake"]
        known = {k: p.get(k, 0.0) for k in PARTS[:-1]}
        known["provider call beyond the fake"] = provider
        for k, v in known.items():
            parts[k].append(v)
        parts["rest"].append(row["wall"] - row["fake"] - sum(known.values()))
        # Of the rest, what the client waited beyond the backend's own send-to-event time.
        parts["transport"].append(row["wall"] - p["total"])
    return {k: round(statistics.median(v), 1) for k, v in parts.items()}


def emit(name: str, rows: list[dict[str, float]], probe: list[dict[str, float]],
         anchor: float, same_body: tuple[float, float], body_kb: float) -> None:
    """Print one figure line: median overhead, target, anchor and split."""
    by_turn = {int(p["turn"]): p for p in probe}
    overhead = statistics.median(r["wall"] - r["fake"] for r in rows)
    checkpoints = statistics.median(
        by_turn[int(r["turn"])].get("checkpoint before", 0.0)
        + by_turn[int(r["turn"])].get("checkpoint after", 0.0) for r in rows)
    # Per turn, then the median: the checkpoints' own spread (git, under load) stays out.
    outside = statistics.median(
        r["wall"] - r["fake"] - by_turn[int(r["turn"])].get("checkpoint before", 0.0)
        - by_turn[int(r["turn"])].get("checkpoint after", 0.0) for r in rows)
    print(json.dumps({
        "bench": name, "value": round(overhead, 1), "unit": "ms",
        "outside_checkpoints_ms": round(outside, 1), "outside_target_ms": TARGET_MS,
        "anchor": "one bare httpx streaming request to the same fake",
        "anchor_value": round(anchor, 1), "target": round(TARGET_MS + checkpoints, 1),
        "turns": [int(r["turn"]) for r in rows],
        "fake_ms": round(statistics.median(r["fake"] for r in rows), 2),
        "bare_request_same_body_ms": round(same_body[0], 1),
        "bare_request_same_body_beyond_the_fake_ms": round(same_body[1], 1),
        "body_kb": round(body_kb),
        "files_changed": statistics.median(r["files"] for r in rows),
        "processes_per_turn": statistics.median(
            by_turn[int(r["turn"])].get("processes spawned", 0.0) for r in rows),
        "split_ms": split(rows, probe)}), flush=True)


def main() -> None:
    """Print the per-turn figures as JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--profile", action="store_true",
                        help="profile the backend (cProfile); top functions to stderr")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tandem-bench-turn-") as tmp:
        base = Path(tmp)
        home, root = base / "home", base / "ws"
        root.mkdir()
        t = time.perf_counter()
        live = generate(root, args.files)
        journal = build_session(home, root)
        Checkpointer(home, root).snapshot("initial", owner=journal.id, turn=0)
        print(f"set-up {time.perf_counter() - t:.1f} s", file=sys.stderr)
        probe_out = base / "probe.json"
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(TANDEM_PROBE_OUT=str(probe_out), PYTHONPATH=str(ROOT / "python"))
        if args.profile:
            env["TANDEM_PROBE_PROFILE"] = "1"
        os.environ.clear()
        os.environ.update(env)
        with TimedFake(Script(default=Reply(text="ok", chunk_size=2))) as fake:
            proc = start_backend(home, TOKEN, argv=[sys.executable, str(BENCH / "turn_probe.py")])
            try:
                client = Client(proc.port)  # type: ignore[attr-defined]
                client.call("hello", {"token": TOKEN})
                # No automatic compaction: every turn projects the whole session.
                client.call("turns/configure", {"credentials": {"openai": {
                    "api_key": "sk-bench", "base_url": fake.base_url + "/v1"}},
                    "default_provider": "openai:bench",
                    "settings_json": json.dumps({"auto_compact": False})})
                info = client.call("sessions/open-file", {"path": str(journal.path),
                                                          "cwd": str(root)})
                session = info["id"]
                turns: list[dict[str, float]] = []
                for _ in range(WARM_UP):
                    client.turn(session)
                changed = series(client, session, turns, root, live, args.runs, changed=True)
                still = series(client, session, turns, root, live, args.runs, changed=False)
                # The body tandem sent last (the whole context, as the APIs want it).
                last = fake.api_requests("/v1/chat/completions")[-1].body
                anchor = bare_request_ms(fake, args.runs)[0]
                same_body = bare_request_ms(fake, args.runs, last)
                body_kb = len(json.dumps(last)) / 1000
                client.peer.close()
            finally:
                proc.terminate()
                proc.wait(30)
        probe = json.loads(probe_out.read_text())
        for p in probe:
            for line in p.pop("spawned", []):
                print(f"turn {p['turn']}: {line}", file=sys.stderr)
        emit(f"turn overhead at turn 1,000, ten files changed ({args.files} files)",
             changed, probe, anchor, same_body, body_kb)
        emit(f"turn overhead at turn 1,000, nothing changed ({args.files} files)",
             still, probe, anchor, same_body, body_kb)
        if args.profile:
            stats = pstats.Stats(str(probe_out.with_suffix(".prof")), stream=sys.stderr)
            stats.sort_stats("cumulative").print_stats(60)
            stats.sort_stats("tottime").print_stats(40)


if __name__ == "__main__":
    main()
