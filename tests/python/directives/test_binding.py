"""Binding: first accepted request binds, closed sessions resume, unavailable ones refuse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ws_helpers import act, create, get, make_app, marker_model, new_session

from tandem.adapters import directives as handlers
from tandem.protocol import directives as dp
from tandem.protocol.base import TandemError
from wire_replies import Plain

api = Plain(handlers)  # replies as the wire's JSON, read by key

pytestmark = pytest.mark.anyio


async def test_first_accepted_request_binds_and_is_reused(project: Path, tmp_path: Path,
                                                          model: Any) -> None:
    fake = model(marker_model)
    app = make_app(tmp_path / "home", fake)
    try:
        first = await new_session(app, project)
        other = await new_session(app, project)
        await create(app, project, "Make it loud")
        # A refused request (bad provider) binds nothing.
        with pytest.raises(TandemError) as bad:
            await act(app, project, "D1", "discuss", session=first, provider="nonsense")
        assert "openai:MODEL" in bad.value.message
        assert (await get(app, project, "D1"))["session"] is None
        reply, _ = await act(app, project, "D1", "discuss", "DISCUSS-Q1", session=first)
        assert reply["session"] == first
        assert (await get(app, project, "D1"))["session"] == first
        # Later requests reuse the bound session, whatever the caller suggests.
        reply, _ = await act(app, project, "D1", "implement", session=other)
        assert reply["session"] == first and reply["turn"] == 2
    finally:
        await app.turns.aclose()


async def test_closed_session_resumes_on_demand(project: Path, tmp_path: Path,
                                                model: Any) -> None:
    fake = model(marker_model)
    home = tmp_path / "home"
    app = make_app(home, fake)
    sid = await new_session(app, project)
    await create(app, project, "Make it loud")
    await act(app, project, "D1", "discuss", "DISCUSS-Q1", session=sid)
    app.sessions.manager.close(sid)  # closed in this backend
    reply, ended = await act(app, project, "D1", "discuss", "again")
    assert reply["session"] == sid and reply["turn"] == 2 and ended.outcome == "succeeded"
    await app.turns.aclose()
    app.sessions.manager.close()
    # A new backend (a restart) resumes it from its journal too.
    app2 = make_app(home, fake)
    try:
        reply, ended = await act(app2, project, "D1", "implement")
        assert reply["session"] == sid and reply["turn"] == 3 and ended.outcome == "succeeded"
        assert len((await get(app2, project, "D1"))["discussion"]) == 2
    finally:
        await app2.turns.aclose()


async def test_unavailable_session_refuses_then_warned_rebind(project: Path, tmp_path: Path,
                                                              model: Any) -> None:
    fake = model(marker_model)
    app = make_app(tmp_path / "home", fake)
    try:
        old = await new_session(app, project)
        await create(app, project, "Make it loud")
        await act(app, project, "D1", "implement", session=old)
        rec = await get(app, project, "D1")
        journal = app.sessions.manager.journals[old].path
        app.sessions.manager.close(old)
        journal.unlink()
        with pytest.raises(TandemError) as refused:
            await act(app, project, "D1", "discuss", "hello?")
        assert refused.value.code == "unavailable"
        assert refused.value.command == "tandem-directive-rebind" and old in refused.value.message
        assert await get(app, project, "D1") == rec  # nothing changed
        # The inspector's record still has the attempt with its journal gone.
        assert rec["attempts"][0]["session"] == old

        new = await new_session(app, project)
        asked = await api.rebind(app, dp.RebindParams(root=str(project), id="D1", session=new))
        assert asked["confirmed"] is False and "Earlier attempts keep pointing" in asked["warning"]
        assert (await get(app, project, "D1"))["session"] == old  # a warning moves nothing
        done = await api.rebind(app, dp.RebindParams(root=str(project), id="D1", session=new,
                                                      confirm=True))
        assert done["confirmed"] and done["record"]["session"] == new
        assert done["record"]["previous_sessions"] == [old]
        reply, ended = await act(app, project, "D1", "request-changes", "FEEDBACK-1")
        assert reply["session"] == new and reply["turn"] == 1 and ended.outcome == "succeeded"
        after = await get(app, project, "D1")
        assert [(a["session"], a["turn"]) for a in after["attempts"]] == [(old, 1), (new, 1)]
        with pytest.raises(TandemError) as same:
            await api.rebind(app, dp.RebindParams(root=str(project), id="D1", session=new,
                                                   confirm=True))
        assert "already bound" in same.value.message
        with pytest.raises(TandemError) as missing:
            await api.rebind(app, dp.RebindParams(root=str(project), id="D1",
                                                   session="0190aaaa-0000-7000-8000-000000000000"))
        assert missing.value.code == "unavailable"
    finally:
        await app.turns.aclose()


async def test_session_of_another_project_is_refused(project: Path, tmp_path: Path,
                                                     model: Any) -> None:
    fake = model(marker_model)
    app = make_app(tmp_path / "home", fake)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    try:
        foreign = await new_session(app, elsewhere)
        await create(app, project, "Make it loud")
        with pytest.raises(TandemError) as err:
            await act(app, project, "D1", "discuss", session=foreign)
        assert "not in this workspace" in err.value.message
        assert (await get(app, project, "D1"))["session"] is None
    finally:
        await app.turns.aclose()


async def test_without_a_session_one_is_found_or_made(project: Path, tmp_path: Path,
                                                      model: Any) -> None:
    fake = model(marker_model)
    app = make_app(tmp_path / "home", fake)
    try:
        await create(app, project, "Make it loud")
        reply, _ = await act(app, project, "D1", "discuss")
        listed = app.sessions.manager.list(str(project))
        assert [s.id for s in listed] == [reply["session"]]
    finally:
        await app.turns.aclose()
