"""Monorepo scale: 100k files in 5k folders (`monorepo_tree`), every figure beside its anchor.

Opt-in (several minutes): runs under ``make bench`` only with
``TANDEM_BENCH_MONOREPO=1`` or when named (``make bench ONLY=monorepo``);
else it says so on stderr and prints nothing. The tree is generated once
into ``.cache/monorepo/`` and copied (``cp -a``) into a scratch folder
beside it for the run, which changes files. Figures (ms, medians):

* ``monorepo_checkpoint_first`` -- the first checkpoint of the tree into a
  fresh store, against the naive shadow repository's ``git add -A && git
  commit`` of the same tree (`bench_checkpoints.Shadow`), alternately, a
  sync before each, the first round discarded. Target 0.6× the anchor
  (``target`` is that ratio's bound in ms, from the anchor). And
  ``monorepo_checkpoint_first_cpu``: the same pair's CPU time (this process
  and its git children), which the load spreads far less than the wall.
* ``monorepo_turn_overhead_ten_files`` -- a turn at turn 1,000 of a real
  ``tandem serve`` (`bench_turn`: journal of 996 turns, the fake OpenAI
  server, the model's ten edits made during the turn), from ``turns/send``
  to ``turn-ended`` minus the fake's own time: everything included, the two
  incremental checkpoints too. Target 250 ms. Anchor: the shadow
  repository's ``git add -A && git commit`` of the same ten changes.
* ``monorepo_rewind_1000_files`` -- a turn that appended two lines to 1,000
  files, rewound: ``sessions/rewind-plan`` and ``sessions/rewind`` over EPC,
  as Rewind's confirm does. Target 1.5 s. Anchor: the shadow repository's
  ``git reset --hard && git clean -fd`` of the same change.
* ``monorepo_review_open_10k_lines`` (batch Emacs, `monorepo_review.el`) --
  ``tandem-review-turn`` of such a turn (a 10,000-line patch, ten lines a
  file) against the backend: the request, the reply read, the insert and
  ``diff-mode``. Target 200 ms. Anchor: ``find-file`` of the same patch
  text saved as a ``.diff`` (stock ``diff-mode``).

Run: ``.venv/bin/python bench/bench_monorepo.py [--files N] [--runs N]``
(direct runs need no switch).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
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

from epc_peer import start_backend  # noqa: E402
from fakes.script import Reply, Script  # noqa: E402

import monorepo_tree  # noqa: E402
from bench_checkpoints import Shadow, change_ten, timed_ms  # noqa: E402
from bench_turn import (  # noqa: E402
    TOKEN,
    WARM_UP,
    Client,
    TimedFake,
    TimedHandler,
    build_session,
    split,
)
from benchlib import emit  # noqa: E402
from tandem.checkpoints import Checkpointer  # noqa: E402

WIDE = 1_000
"""Files a wide turn changes (Rewind's figure and the review's patch)."""


def wanted() -> bool:
    """Whether this run asked for the monorepo figures (they take minutes)."""
    named = os.environ.get("TANDEM_BENCH_ONLY", "").split(",")
    return os.environ.get("TANDEM_BENCH_MONOREPO") == "1" or "bench_monorepo" in named


def text_files(root: Path) -> list[Path]:
    """The tree's text sources, sorted (what the edits pick from)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in (".git", "build"))
        out += [Path(dirpath) / f for f in filenames if f.endswith((".py", ".ts", ".md"))]
    return sorted(out)


def append_two(paths: list[Path], tag: int) -> None:
    """Two lines appended to each of PATHS: ten patch lines a file."""
    for p in paths:
        with open(p, "a") as f:
            f.write(f"wide_{tag}_a = 1\nwide_{tag}_b = 2\n")


def cpu_ms() -> float:
    """CPU seconds of this process and its waited-for children so far, in ms."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return (me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime) * 1000


def with_cpu(fn: Callable[[], object], cpu: list[float]) -> float:
    """Wall ms of FN; its CPU ms (this process and git) appended to CPU."""
    c = cpu_ms()
    ms = timed_ms(fn)
    cpu.append(cpu_ms() - c)
    return ms


def first_checkpoints(base: Path, root: Path, home: Path, owner: str,
                      rounds: int) -> tuple[float, float, Shadow, tuple[float, float]]:
    """Alternating first checkpoints; the last round's store is HOME's, kept.

    Also the medians of their CPU time (ours, the anchor's): on a loaded
    machine the wall times spread by 2-3x, the CPU times by far less."""
    ours: list[float] = []
    theirs: list[float] = []
    our_cpu: list[float] = []
    their_cpu: list[float] = []
    shadow = None
    for n in range(rounds):
        last = n == rounds - 1
        store = home if last else base / f"home-first-{n}"
        shadow = Shadow(base / f"shadow-first-{n}", root)
        for who in (["tandem", "shadow"] if n % 2 == 0 else ["shadow", "tandem"]):
            subprocess.run(["sync"], check=False)
            if who == "tandem":
                kept = owner if last else None
                ours.append(with_cpu(lambda s=store, o=kept: Checkpointer(s, root).snapshot(
                    "initial", owner=o, turn=None if o is None else 0), our_cpu))
            else:
                theirs.append(with_cpu(shadow.commit, their_cpu))
        print(f"first checkpoint round {n}: {ours[-1]:.0f} ms ({our_cpu[-1]:.0f} CPU), "
              f"shadow {theirs[-1]:.0f} ms ({their_cpu[-1]:.0f} CPU)", file=sys.stderr)
        if not last:
            shutil.rmtree(store)
            shutil.rmtree(base / f"shadow-first-{n}")
    assert shadow is not None
    if rounds > 1:
        del ours[0], theirs[0], our_cpu[0], their_cpu[0]  # the warm-up round
    return (statistics.median(ours), statistics.median(theirs), shadow,
            (statistics.median(our_cpu), statistics.median(their_cpu)))


def turn_series(client: Client, session: str, shadow: Shadow, root: Path, live: list[Path],
                runs: int) -> tuple[list[dict[str, float]], list[float]]:
    """RUNS turns of ten changes; per turn the shadow commit of the same changes (anchor)."""
    rows, anchors = [], []
    for n in range(runs):
        def edit(n: int = n) -> None:
            change_ten(root, live, random.Random(9000 + n), 9000 + n)

        TimedHandler.edit = edit
        TimedHandler.times.clear()
        turn, wall, files = client.turn(session)
        TimedHandler.edit = None
        rows.append({"turn": turn, "wall": wall, "fake": sum(TimedHandler.times),
                     "files": len(files)})
        live[:] = [p for p in live if p.exists()]
        anchors.append(timed_ms(shadow.commit))
    return rows, anchors


def wide_turn(client: Client, session: str, paths: list[Path], tag: int) -> int:
    """One turn whose model appends two lines to each of PATHS; its number."""
    TimedHandler.edit = lambda: append_two(paths, tag)
    try:
        turn, _wall, files = client.turn(session)
    finally:
        TimedHandler.edit = None
    if len(files) != len(paths):
        raise RuntimeError(f"turn {turn} changed {len(files)} files, not {len(paths)}")
    return turn


def rewinds(client: Client, session: str, shadow: Shadow, paths: list[Path],
            runs: int) -> tuple[list[float], list[float], int]:
    """RUNS wide turns rewound, each beside the shadow's reset of the same change."""
    ours, theirs = [], []
    for n in range(runs):
        before = shadow.commit()
        turn = wide_turn(client, session, paths, 100 + n)
        t = time.perf_counter()
        plan = client.call("sessions/rewind-plan", {"session": session, "turn": turn})
        done = client.call("sessions/rewind", {"session": session, "turn": turn,
                                               "digest": plan["digest"]})
        ours.append((time.perf_counter() - t) * 1000)
        if len(done["restored"]) != len(paths):
            raise RuntimeError(f"rewind restored {len(done['restored'])} files")
        append_two(paths, 100 + n)  # the same change again, for the anchor to undo
        shadow.commit()
        theirs.append(timed_ms(lambda b=before: shadow.restore(b)))
    last = wide_turn(client, session, paths, 999)  # kept: the review's patch
    return ours, theirs, last


def review(home: Path, session: str, turn: int, scratch: Path) -> list[dict[str, Any]]:
    """The Emacs figures of the review of TURN (`monorepo_review.el`), as JSON lines."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"),
               BENCH_REVIEW_HOME=str(home), BENCH_REVIEW_SESSION=session,
               BENCH_REVIEW_TURN=str(turn), BENCH_REVIEW_SCRATCH=str(scratch))
    proc = subprocess.run(
        ["emacs", "--batch", "--no-init-file", "-L", str(ROOT / "elisp"), "-L", str(BENCH),
         "-l", str(BENCH / "monorepo_review.el"), "-f", "bench-monorepo-review-main"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    if proc.returncode:
        raise RuntimeError(f"monorepo_review.el failed:\n{proc.stderr[-3000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    """Generate (once) and copy the tree, then print the monorepo figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=monorepo_tree.FILES)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3, help="first-checkpoint rounds")
    args = parser.parse_args()
    if os.environ.get("TANDEM_BENCH_RUN") == "1" and not wanted():
        print("bench_monorepo: skipped (TANDEM_BENCH_MONOREPO=1 or ONLY=monorepo runs it)",
              file=sys.stderr)
        return
    t0 = time.perf_counter()
    tree = monorepo_tree.ensure_tree(args.files)
    print(f"tree ready {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="run-", dir=monorepo_tree.CACHE) as tmp:
        base = Path(tmp)
        root = monorepo_tree.working_copy(tree, base / "ws")
        home = base / "home"
        live = text_files(root)
        print(f"copied {time.perf_counter() - t0:.1f} s ({len(live)} text files)",
              file=sys.stderr)
        journal = build_session(home, root)
        first, shadow_first, shadow, cpu = first_checkpoints(base, root, home, journal.id,
                                                             args.rounds)
        emit("monorepo_checkpoint_first", first, "shadow repo git add -A && git commit",
             shadow_first, round(0.6 * shadow_first, 1), digits=1)
        emit("monorepo_checkpoint_first_cpu", cpu[0], "the same anchor's CPU time", cpu[1],
             round(0.6 * cpu[1], 1), digits=1)

        probe_out = base / "probe.json"
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(TANDEM_PROBE_OUT=str(probe_out), PYTHONPATH=str(ROOT / "python"))
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        wide = random.Random(5).sample(live, WIDE)
        try:
            with TimedFake(Script(default=Reply(text="ok", chunk_size=2))) as fake:
                proc = start_backend(home, TOKEN,
                                     argv=[sys.executable, str(BENCH / "turn_probe.py")])
                try:
                    client = Client(proc.port)  # type: ignore[attr-defined]
                    # A wide turn under load can be silent for more than epc_peer's 30 s.
                    client.peer.sock.settimeout(600)
                    client.call("hello", {"token": TOKEN})
                    client.call("turns/configure", {"credentials": {"openai": {
                        "api_key": "sk-bench", "base_url": fake.base_url + "/v1"}},
                        "default_provider": "openai:bench",
                        "settings_json": json.dumps({"auto_compact": False})})
                    info = client.call("sessions/open-file", {"path": str(journal.path),
                                                              "cwd": str(root)})
                    session = info["id"]
                    for _ in range(WARM_UP):
                        client.turn(session)
                    shadow.commit()
                    rows, shadow_ten = turn_series(client, session, shadow, root, live,
                                                   args.runs)
                    wide = [p for p in wide if p.exists()]
                    back, shadow_back, last = rewinds(client, session, shadow, wide, 3)
                    client.peer.close()
                finally:
                    proc.terminate()
                    proc.wait(30)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        probe = json.loads(probe_out.read_text())
        by_turn = {int(p["turn"]): p for p in probe}
        overhead = statistics.median(r["wall"] - r["fake"] for r in rows)
        print(json.dumps({
            "bench": "monorepo_turn_overhead_ten_files", "value": round(overhead, 1),
            "unit": "ms", "anchor": "shadow repo git add -A && git commit of the same ten changes",
            "anchor_value": round(statistics.median(shadow_ten), 1), "target": 250,
            "turns": [int(r["turn"]) for r in rows],
            "checkpoints_ms": round(statistics.median(
                by_turn[int(r["turn"])].get("checkpoint before", 0.0)
                + by_turn[int(r["turn"])].get("checkpoint after", 0.0) for r in rows), 1),
            "files_changed": statistics.median(r["files"] for r in rows),
            "processes_per_turn": statistics.median(
                by_turn[int(r["turn"])].get("processes spawned", 0.0) for r in rows),
            "split_ms": split(rows, probe)}), flush=True)
        emit("monorepo_rewind_1000_files", statistics.median(back),
             "shadow repo git reset --hard && git clean -fd", statistics.median(shadow_back),
             1500, digits=1)
        for line in review(home, session, last, base):
            print(json.dumps(line), flush=True)
        print(f"total {time.perf_counter() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
