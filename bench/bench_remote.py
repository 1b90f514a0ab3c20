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

Skips, printing why, when the agent-server is not installed (``.venv/bin/python
tests/python/remote/agent_server.py install``) or the remote engine is not
there. Run: ``.venv/bin/python bench/bench_remote.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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


async def _tandem_turns(server: RunningServer, llm_url: str, runs: int) -> list[float]:
    """Milliseconds from acceptance to turn end of RUNS turns after a first one."""
    from tandem.adapters.sessions import new
    from tandem.app import App
    from tandem.config.front_end import ClientConfig, RemoteHost
    from tandem.events import NullSink
    from tandem.protocol.sessions import NewParams
    from tandem.turns.engine import TurnSpec

    with tempfile.TemporaryDirectory(prefix="tandem-bench-remote-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        app = App(home=Path(tmp) / "home", events=NullSink())
        try:
            app.turns.configure(ClientConfig(
                remote_hosts={"box": RemoteHost(url=server.url, forward_keys=True,
                                                api_key=server.api_key)},
                credentials={"openai": {"api_key": LLM_KEY, "base_url": llm_url}}))
            sid = (await new(app, NewParams(cwd=str(project)))).id
            target = await app.remote.attach(sid, "box", server.url, server.api_key,
                                             f"workspace/tandem-{secrets.token_hex(4)}")
            Path(target.resolved_working_dir).mkdir(parents=True, exist_ok=True)
            engine = app.turns.engine
            times: list[float] = []
            for i in range(runs + 1):
                started = time.perf_counter()
                turn = await engine.accept(TurnSpec(session=sid, text=f"hello {i}",
                                                    provider=f"openai:{MODEL}",
                                                    permission_mode="auto-edit"))
                ended = await asyncio.wait_for(engine.wait(sid, turn), TIMEOUT)
                if ended.outcome != "succeeded":
                    raise RuntimeError(f"remote turn {turn} ended {ended.outcome}: {ended.error}")
                if i:  # the first turn also opens the conversation
                    times.append((time.perf_counter() - started) * 1000)
            return times
        finally:
            await app.turns.aclose()


async def _bare_turns(server: RunningServer, llm_url: str, runs: int) -> list[float]:
    wd = server.home / f"workspace/bare-{secrets.token_hex(4)}"
    wd.mkdir(parents=True)
    bare = BareClient(server, llm_url, str(wd))
    try:
        await bare.start()
        await bare.turn("hello")  # as tandem's: the first turn is not counted
        return [await bare.turn(f"hello {i}") for i in range(runs)]
    finally:
        await bare.aclose()


async def _measure(runs: int) -> None:
    with FakeOpenAI(Script([], default=Reply(text="ok"))) as fake, \
            run_server(api_key="bench-" + secrets.token_hex(4)) as server:
        llm_url = fake.base_url + "/v1"
        # Alternate, so a slow moment of the loaded machine hits both sides.
        bare: list[float] = []
        ours: list[float] = []
        for _ in range(2):
            bare += await _bare_turns(server, llm_url, runs)
            ours += await _tandem_turns(server, llm_url, runs)
        anchor = statistics.median(bare)
        value = statistics.median(ours)
        emit("remote_turn_ms", value, "bare httpx+websockets client, same server and fake",
             anchor, None)
        emit("remote_turn_overhead_ms", value - anchor,
             "bare client's own turn (the server's events)", anchor, None)


def main() -> int:
    """Measure, or say why not."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    try:
        import tandem.remote.engine  # noqa: F401 - the engine this measures
    except ImportError:
        print("bench_remote: skipped: no remote engine (tandem.remote.engine) in this "
              "checkout", file=sys.stderr)
        return 0
    try:
        asyncio.run(_measure(args.runs))
    except Missing as e:
        print(f"bench_remote: skipped: no agent-server: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
