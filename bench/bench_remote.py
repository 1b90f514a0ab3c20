"""Overhead of a remote turn: tandem's time beyond the agent-server's own.

Figure: wall time of one chat turn of a session attached to the REAL
openhands-agent-server (started as tests/python/remote/agent_server.py starts
it), from the turn's acceptance (what ``turns/send`` does) to its end on
tandem's one terminal path (``turn-ended``), the conversation already open
(a second turn). The agent's LLM is tandem's local fake OpenAI server; its
answer is one short text, so the figure is the cost of the round trips, not
of a model.

Anchor, same server, same fake LLM, same run: a bare client (httpx +
websockets) that posts the same message to an open conversation of its own
and reads the session socket until the conversation's state is
``finished``. The difference between the two is what tandem adds: the
journal, the mapping of events to the turn, the checkpoint before and after
the turn, the socket it opens per turn.

Eight at once (``--sessions``): one backend, eight sessions each attached to a
working dir of its own on the same server, a turn of each started together;
each turn's time beside eight bare clients' turns started together, and the
difference (the overhead of a turn among eight) beside one turn's overhead
alone, the same run. Rounds alternate the four series; the per-round
medians and the load go to stderr.

Skips, printing why, when the agent-server is not installed (``.venv/bin/python
tests/python/remote/agent_server.py install``) or the remote engine is not
there. Run: ``.venv/bin/python bench/bench_remote.py [--runs N] [--sessions N]``
(or ``make bench ONLY=remote``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import httpx  # noqa: E402
from fakes.openai_server import FakeOpenAI  # noqa: E402
from fakes.script import Reply, Script  # noqa: E402

from benchlib import emit  # noqa: E402
from remote.agent_server import Missing, RunningServer, run_server  # noqa: E402

MODEL = "fake-model"
LLM_KEY = "sk-bench-" + secrets.token_hex(6)
TIMEOUT = 120.0


def _headers(server: RunningServer) -> dict[str, str]:
    return {"X-Session-API-Key": server.api_key} if server.api_key else {}


class BareClient:
    """The anchor: one conversation, a message posted, the socket read until finished."""

    def __init__(self, server: RunningServer, llm_url: str, working_dir: str) -> None:
        self.server = server
        self.llm_url = llm_url
        self.working_dir = working_dir
        self.http = httpx.AsyncClient(base_url=server.url, headers=_headers(server),
                                      timeout=TIMEOUT)
        self.conversation = ""

    async def start(self) -> None:
        """Open the conversation (not timed: tandem's second turn has one open too)."""
        body = {"agent_settings": {"llm": {"usage_id": "bench", "model": f"openai/{MODEL}",
                                           "base_url": self.llm_url, "api_key": LLM_KEY}},
                "workspace": {"working_dir": self.working_dir}}
        reply = await self.http.post("/api/conversations", json=body)
        reply.raise_for_status()
        self.conversation = reply.json()["id"]

    async def turn(self, text: str) -> float:
        """Milliseconds from posting TEXT to the durable ``finished`` state."""
        import websockets  # a dependency the remote engine brings

        ws_url = self.server.url.replace("http://", "ws://", 1)
        url = f"{ws_url}/sockets/session/{self.conversation}"
        started = time.perf_counter()
        async with websockets.connect(url, additional_headers=_headers(self.server)) as ws:
            json.loads(await ws.recv())  # the sync frame: the cursor is now
            reply = await self.http.post(
                f"/api/conversations/{self.conversation}/events",
                json={"role": "user", "content": [{"type": "text", "text": text}], "run": True})
            reply.raise_for_status()
            async for raw in ws:
                frame = json.loads(raw)
                event = frame.get("event") or {}
                if (frame.get("type") == "durable"
                        and event.get("kind") == "ConversationStateUpdateEvent"
                        and _finished(event)):
                    break
        return (time.perf_counter() - started) * 1000

    async def aclose(self) -> None:
        """Close the HTTP pool."""
        await self.http.aclose()


def _finished(event: dict[str, Any]) -> bool:
    key, value = event.get("key"), event.get("value")
    if key == "execution_status":
        return value in ("finished", "error", "stuck")
    if isinstance(value, dict):
        return value.get("execution_status") in ("finished", "error", "stuck")
    return False


class Tandem:
    """SESSIONS sessions of one backend (one `App`), each attached to its own working dir."""

    def __init__(self, server: RunningServer, llm_url: str, sessions: int) -> None:
        self.server = server
        self.llm_url = llm_url
        self.count = sessions
        self.sids: list[str] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="tandem-bench-remote-")
        self.app: Any = None

    async def start(self) -> None:
        """Attach every session and run its first turn (it opens the conversation)."""
        from tandem.adapters.sessions import new
        from tandem.app import App
        from tandem.config.front_end import ClientConfig, RemoteHost
        from tandem.events import NullSink
        from tandem.protocol.sessions import NewParams

        tmp = Path(self._tmp.name)
        self.app = app = App(home=tmp / "home", events=NullSink())
        app.turns.configure(ClientConfig(
            remote_hosts={"box": RemoteHost(url=self.server.url, forward_keys=True,
                                            api_key=self.server.api_key)},
            credentials={"openai": {"api_key": LLM_KEY, "base_url": self.llm_url}}))
        for n in range(self.count):
            project = tmp / f"project-{n}"
            project.mkdir()
            subprocess.run(["git", "init", "-q"], cwd=project, check=True)
            sid = (await new(app, NewParams(cwd=str(project)))).id
            target = await app.remote.attach(sid, "box", self.server.url, self.server.api_key,
                                             f"workspace/tandem-{secrets.token_hex(4)}")
            Path(target.resolved_working_dir).mkdir(parents=True, exist_ok=True)
            self.sids.append(sid)
            await self.turn(sid, "hello")

    async def turn(self, sid: str, text: str) -> float:
        """Milliseconds from acceptance to the end of one turn of session SID."""
        from tandem.turns.engine import TurnSpec

        engine = self.app.turns.engine
        started = time.perf_counter()
        turn = await engine.accept(TurnSpec(session=sid, text=text, provider=f"openai:{MODEL}",
                                            permission_mode="auto-edit"))
        ended = await asyncio.wait_for(engine.wait(sid, turn), TIMEOUT)
        if ended.outcome != "succeeded":
            raise RuntimeError(f"remote turn {turn} ended {ended.outcome}: {ended.error}")
        return (time.perf_counter() - started) * 1000

    async def one(self, i: int) -> float:
        """One turn of the first session, alone."""
        return await self.turn(self.sids[0], f"hello {i}")

    async def all(self, i: int) -> list[float]:
        """One turn of every session, all at once: each turn's milliseconds."""
        return list(await asyncio.gather(*(self.turn(sid, f"hello {i}") for sid in self.sids)))

    async def aclose(self) -> None:
        """Close the backend and remove its files."""
        if self.app is not None:
            await self.app.turns.aclose()
        self._tmp.cleanup()


class Bares:
    """SESSIONS bare clients, each with a conversation of its own in its own working dir."""

    def __init__(self, server: RunningServer, llm_url: str, sessions: int) -> None:
        self.clients: list[BareClient] = []
        for _ in range(sessions):
            wd = server.home / f"workspace/bare-{secrets.token_hex(4)}"
            wd.mkdir(parents=True)
            self.clients.append(BareClient(server, llm_url, str(wd)))

    async def start(self) -> None:
        """Open every conversation and run its first turn (as tandem's, not counted)."""
        for bare in self.clients:
            await bare.start()
            await bare.turn("hello")

    async def one(self, i: int) -> float:
        """One turn of the first client, alone."""
        return await self.clients[0].turn(f"hello {i}")

    async def all(self, i: int) -> list[float]:
        """One turn of every client, all at once."""
        return list(await asyncio.gather(*(b.turn(f"hello {i}") for b in self.clients)))

    async def aclose(self) -> None:
        """Close every HTTP pool."""
        for bare in self.clients:
            await bare.aclose()


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


async def _measure(runs: int, sessions: int) -> None:
    with FakeOpenAI(Script([], default=Reply(text="ok"))) as fake, \
            run_server(api_key="bench-" + secrets.token_hex(4)) as server:
        llm_url = fake.base_url + "/v1"
        ours, bare = Tandem(server, llm_url, sessions), Bares(server, llm_url, sessions)
        try:
            await ours.start()
            await bare.start()
            single: tuple[list[float], list[float]] = ([], [])
            many: tuple[list[float], list[float]] = ([], [])
            rounds: list[tuple[float, float, float, float]] = []
            # Alternate, so a slow moment of the loaded machine hits both sides.
            for i in range(runs):
                one = (await bare.one(i), await ours.one(i))
                lots = (await bare.all(i), await ours.all(i))
                for side in (0, 1):
                    single[side].append(one[side])
                    many[side].extend(lots[side])
                rounds.append((one[0], one[1], statistics.median(lots[0]),
                               statistics.median(lots[1])))
            print(f"bench_remote: load {_load()}; per round (bare, tandem, bare x{sessions}, "
                  f"tandem x{sessions}, ms): "
                  + "; ".join(" ".join(f"{x:.0f}" for x in r) for r in rounds), file=sys.stderr)
        finally:
            await ours.aclose()
            await bare.aclose()
        anchor, value = statistics.median(single[0]), statistics.median(single[1])
        emit("remote_turn_ms", value, "bare httpx+websockets client, same server and fake",
             anchor, round(1.5 * anchor, 1))
        emit("remote_turn_overhead_ms", value - anchor,
             "bare client's own turn (the server's events)", anchor, round(0.5 * anchor, 1))
        many_anchor, many_value = statistics.median(many[0]), statistics.median(many[1])
        emit(f"remote_turn_x{sessions}_ms", many_value,
             f"{sessions} bare clients' turns at once, same server and fake", many_anchor,
             round(1.5 * many_anchor, 1))
        overhead = value - anchor
        emit(f"remote_turn_x{sessions}_overhead_ms", many_value - many_anchor,
             "one remote turn's overhead alone, this run", overhead, round(1.5 * overhead, 1))


def main() -> int:
    """Measure, or say why not."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=8)
    args = parser.parse_args()
    try:
        import tandem.remote.engine  # noqa: F401 - the engine this measures
    except ImportError:
        print("bench_remote: skipped: no remote engine (tandem.remote.engine) in this "
              "checkout", file=sys.stderr)
        return 0
    try:
        asyncio.run(_measure(args.runs, args.sessions))
    except Missing as e:
        print(f"bench_remote: skipped: no agent-server: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
