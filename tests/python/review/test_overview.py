"""The sessions overview against the real engine: running, waiting for you, idle, closed."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI

from rewind.helpers import PROVIDER, new_session, use, writes
from tandem.adapters.sessions import overview
from tandem.app import App
from tandem.protocol.sessions import OverviewParams
from tandem.turns.engine import TurnSpec

pytestmark = pytest.mark.anyio


async def _states(app: App) -> dict[str, tuple[str, str | None]]:
    rows = (await overview(app, OverviewParams())).rows
    return {r.id: (r.state, r.question) for r in rows}


async def test_overview_shows_waiting_first_then_idle(
        app: App, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with FakeOpenAI(writes(("x.txt", "x\n"))) as fake:
        use(fake, monkeypatch)
        engine = app.turns.engine
        try:
            quiet = await new_session(app, project)
            asking = await new_session(app, other)
            turn = await engine.accept(TurnSpec(session=asking, text="write x",
                                                provider=PROVIDER, permission_mode="ask"))
            for _ in range(500):
                if engine.running[asking].sink.pending:
                    break
                await asyncio.sleep(0.01)
            rows = (await overview(app, OverviewParams())).rows
            assert rows[0].id == asking and rows[0].state == "waiting"
            assert rows[0].question and "x.txt" in rows[0].question
            assert rows[0].turn == turn and rows[0].engine == "native"
            # The header's count: turns that ended (this one still runs).
            assert rows[0].provider == PROVIDER and rows[0].turns == 0
            assert (await _states(app))[quiet] == ("idle", None)
            interaction = next(iter(engine.running[asking].sink.pending))
            assert engine.answer(asking, interaction, "allow_once")
            await engine.wait(asking, turn)
            states = await _states(app)
            assert states[asking] == ("idle", None)
            app.sessions.manager.close(quiet)
            assert (await _states(app))[quiet] == ("closed", None)
            row = next(r for r in (await overview(app, OverviewParams())).rows
                       if r.id == asking)
            assert row.input_tokens >= 0 and row.turns == 1
            only = (await overview(app, OverviewParams(cwd=str(project)))).rows
            assert [r.id for r in only] == [quiet]
            shutil.rmtree(project)
            assert (await _states(app))[quiet] == ("directory-gone", None)
        finally:
            await app.turns.aclose()
