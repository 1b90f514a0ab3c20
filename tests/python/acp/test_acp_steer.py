"""Steer and an ACP agent: an agent takes no input mid-turn, so the backend says so
(``unsupported``, naming the queue) and the queue takes the guidance instead.

A real agent process (fake_agent.py over real pipes) runs a turn that sleeps;
the steer is refused while it runs, queued, and goes as the next turn.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_acp_fake_agent import run
from test_acp_robustness import _configure

from tandem.adapters import turns as turn_api
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.events import RecordingSink as EventRecorder
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import NewParams
from tandem.protocol.turns import QueueParams, SteerParams
from tandem.store.entry_cache import journal_dicts
from tandem.turns.engine import TurnSpec


def test_an_acp_turn_refuses_a_steer_and_the_queue_takes_it(tmp_path: Path, root: Path) -> None:
    _configure(tmp_path, {"prompts": [[{"say": "working"}, {"sleep": 1.5}, {"say": " done"}],
                                      [{"say": "second"}]]})

    async def scenario() -> tuple[TandemError, list[str], list[str]]:
        app = App(home=tmp_path / "home", events=EventRecorder())
        app.turns.config.default_provider = "acp:fake"  # what the queued message goes with
        try:
            sid = (await new(app, NewParams(cwd=str(root)))).id
            engine = app.turns.engine
            turn = await engine.accept(TurnSpec(session=sid, text="first", provider="acp:fake"))
            with pytest.raises(TandemError) as err:
                await turn_api.steer(app, SteerParams(session=sid, text="go left"))
            # What Emacs does when the user says yes to its offer.
            await turn_api.queue(app, QueueParams(session=sid, text="go left"))
            await engine.wait(sid, turn)
            for _ in range(500):
                await app.queue.background_done()
                if engine.running.get(sid) is None and len(
                        [e for e in journal_dicts(app.sessions.journal(sid))
                         if e["type"] == "turn_end"]) == 2:
                    break
                running = engine.running.get(sid)
                if running is not None:
                    await asyncio.shield(running.task)
                await asyncio.sleep(0.02)
            got = list(journal_dicts(app.sessions.journal(sid)))
            return (err.value, [e["text"] for e in got if e["type"] == "user"],
                    [e["type"] for e in got if e["type"] == "steer"])
        finally:
            await app.aclose()

    error, users, steers = run(scenario())
    assert error.code == "unsupported"
    assert "acp:fake cannot take guidance" in error.message and "queue it" in error.message
    assert steers == []
    assert users == ["first", "go left"]  # the queued guidance went as the next turn
