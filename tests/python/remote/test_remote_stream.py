"""Remote turns stream their text, and a server killed mid-turn fails the turn by name.

Both run the real openhands-agent-server; its agent talks to tandem's fake
LLM, which streams each reply in small SSE chunks.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.app import App
from tandem.remote.events_map import EventMap
from tandem.turns.engine import TurnSpec

from .agent_server import RunningServer, serve_for_tests
from .engine_helpers import (
    PROVIDER,
    agent_requests,
    agent_script,
    attached_session,
    chat,
    configure,
    entries,
)

pytestmark = pytest.mark.anyio

RESTART_LIMIT = 60.0
"""Seconds a turn may take to fail after its server died (reconnects back off to ~6 s)."""


def _server() -> Iterator[RunningServer]:
    yield from serve_for_tests("tandem-remote-stream", "remote streaming")


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    yield from _server()


async def test_a_remote_answer_streams_and_is_journaled_once(
        server: RunningServer, app: App, project: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    answer = "Streaming works: this answer arrives in many small pieces."
    deltas: list[dict[str, Any]] = []
    real = EventMap.on_delta

    def spy(self: EventMap, frame: dict[str, Any]) -> None:
        deltas.append(frame)
        real(self, frame)

    monkeypatch.setattr(EventMap, "on_delta", spy)
    with FakeOpenAI(agent_script(Reply(text=answer, chunk_size=5))) as fake:
        configure(app, server, fake)
        sid, _wd = await attached_session(app, project, server)
        ended = await chat(app, sid, "stream please")
        assert ended.outcome == "succeeded", ended.error
        # The server's agent asked its LLM to stream.
        assert agent_requests(fake)[0].get("stream") is True
        texts = [d["content"] for d in deltas if d.get("kind") == "text"]
        assert len(texts) > 1, deltas
        assert "".join(texts) == answer
        assert len({d["item_id"] for d in deltas}) == 1
        # The durable MessageEvent that follows adds nothing: the answer once.
        log = entries(app, sid)
        assert [e["text"] for e in log if e["type"] == "assistant"] == [answer]
        assert ended.answer == answer
    await app.turns.aclose()


async def test_a_server_killed_mid_turn_fails_the_turn_by_name(app: App, project: Path) -> None:
    for srv in _server():  # a server of its own: this test kills it
        with FakeOpenAI(agent_script(Reply(text="thinking…", stall=True))) as fake:
            configure(app, srv, fake)
            sid, _wd = await attached_session(app, project, srv)
            engine = app.turns.engine
            turn = await engine.accept(TurnSpec(session=sid, text="wait",
                                                provider=PROVIDER), None)
            for _ in range(600):  # the agent's LLM call hangs in the stall now
                if agent_requests(fake):
                    break
                await asyncio.sleep(0.1)
            assert agent_requests(fake), "the agent never called its LLM"
            await asyncio.sleep(0.5)
            assert srv.pid is not None
            os.killpg(srv.pid, signal.SIGKILL)
            killed = time.monotonic()
            ended = await asyncio.wait_for(engine.wait(sid, turn), RESTART_LIMIT)
            took = time.monotonic() - killed
            assert ended.outcome == "failed"
            assert ended.error is not None and "reconnects failed" in ended.error, ended.error
            assert srv.url in ended.error
            print(f"\nturn failed {took:.1f}s after the server was killed", file=sys.stderr)
        await app.turns.aclose()
