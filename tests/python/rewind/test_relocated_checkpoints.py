"""Rewind and turn patches of turns taken before the session's folder moved."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI

from tandem.adapters.sessions import turn_patch
from tandem.app import App
from tandem.protocol.sessions import TurnPatchParams

from .helpers import chat, new_session, tree, use, writes

pytestmark = pytest.mark.anyio

SCRIPT = [
    *writes(("a.txt", "alpha one\n"), ("b.txt", "bee\n")),
    *writes(("a.txt", "alpha two\n"), ("c.txt", "sea\n")),
]


async def test_rewind_after_a_move_restores_pre_move_files(
        app: App, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(list(SCRIPT)) as fake:
        use(fake, monkeypatch)
        sid = await new_session(app, project)
        await chat(app, sid, "FIRST")
        await chat(app, sid, "SECOND")
    app.sessions.manager.close(sid)
    moved = tmp_path / "moved"
    project.rename(moved)
    before_first = {"a.txt": b"alpha\n", "keep.txt": b"kept\n"}
    app.sessions.manager.relocate(sid, str(moved))
    patch = await turn_patch(app, TurnPatchParams(session=sid, turn=1))
    assert "+alpha one" in patch.patch.diff and "+bee" in patch.patch.diff
    plan = await app.rewinds.plan(sid, 1)
    await app.rewinds.rewind(sid, 1, plan.digest)
    for name, data in before_first.items():
        assert (moved / name).read_bytes() == data
    assert not (moved / "b.txt").exists() and not (moved / "c.txt").exists()
    assert ".git/HEAD" in tree(moved) or (moved / ".git").is_dir()
