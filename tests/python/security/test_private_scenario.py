"""Private state through a whole session's life, under a loose umask.

New session, turns that change files (the fake OpenAI server over real
HTTP), the project moved and the session resumed there, a rewind, its undo,
a compaction, a review revert, the sessions overview, a trust grant: after
all of it every path under the state directories is 0600 / 0700 or
stricter, while folders a rewind or an undo recreates in the project keep
the project's own modes (they are the user's files).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from rewind.helpers import chat, use, writes
from tandem.adapters import review as review_api
from tandem.adapters import sessions as sessions_api
from tandem.adapters import settings as settings_api
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.base import Params

from .modes import loose

pytestmark = pytest.mark.anyio

SCRIPT = [
    *writes(("a.txt", "alpha one\n"), ("b.txt", "bee\n")),
    *writes(("a.txt", "alpha two\n"), ("c/deep/x.txt", "deep\n")),
    *writes(("d.txt", "dee\n")),
    Reply(text="SUMMARY: alpha and bee."),
    Reply(text="after everything"),
]


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """The umask most users have (022), whatever the test runner's was."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


async def call(app: App, module: Any, name: str, **params: Any) -> Any:
    """Run the handler of method NAME, its params validated as the server would."""
    spec = next(m for m in module.METHODS if m.name == name)
    args: Params = spec.params(**params)
    return await spec.handler(app, args)


async def test_every_state_path_stays_private_through_a_sessions_life(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loose_umask: None) -> None:
    state, config = Path(os.environ["TANDEM_HOME"]), Path(os.environ["XDG_CONFIG_HOME"])
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    (config / "tandem").mkdir(mode=0o700)
    (config / "tandem" / "settings.json").write_text(json.dumps({"compaction_keep_turns": 1}))
    os.chmod(config / "tandem" / "settings.json", 0o600)
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("alpha\n")
    (project / ".tandem").mkdir()
    (project / ".tandem" / "settings.json").write_text('{"permission_mode": "auto-edit"}')
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    app = App(home=state, events=RecordingSink())
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            made = await call(app, sessions_api, "sessions/new", cwd=str(project))
            sid = made.id
            assert (await chat(app, sid, "FIRST")).outcome == "succeeded"
            await call(app, sessions_api, "sessions/close", session=sid)
            moved = tmp_path / "moved"
            project.rename(moved)
            info = await call(app, sessions_api, "sessions/resume", query=sid, cwd=str(moved),
                              relocate=True)
            assert info.relocated
            await call(app, sessions_api, "sessions/list", cwd=str(moved))
            await call(app, sessions_api, "sessions/overview")
            assert (await chat(app, sid, "SECOND")).outcome == "succeeded"
            assert (await chat(app, sid, "THIRD")).outcome == "succeeded"
            # Rewind before turn 2 (c/deep goes), then undo it (c/deep comes back).
            plan = await call(app, sessions_api, "sessions/rewind-plan", session=sid, turn=2)
            await call(app, sessions_api, "sessions/rewind", session=sid, turn=2,
                       digest=plan.digest)
            assert not (moved / "c").exists()
            undo = await call(app, sessions_api, "sessions/rewind-undo-plan", session=sid)
            await call(app, sessions_api, "sessions/rewind-undo", session=sid,
                       digest=undo.digest)
            assert (moved / "c" / "deep" / "x.txt").read_text() == "deep\n"
            await call(app, sessions_api, "sessions/compact", session=sid)
            await call(app, review_api, "review/revert", session=sid, turn=3, path="d.txt")
            assert not (moved / "d.txt").exists()
            report = await call(app, settings_api, "settings/report", cwd=str(moved))
            await call(app, settings_api, "settings/trust", cwd=str(moved),
                       sha256=report.sha256)
            assert (await chat(app, sid, "FOURTH")).outcome == "succeeded"
        finally:
            await app.aclose()
    # The project's folders a rewind's undo recreated are the user's: the umask's modes.
    assert stat.S_IMODE((moved / "c").stat().st_mode) == 0o755
    assert stat.S_IMODE((moved / "c" / "deep").stat().st_mode) == 0o755
    assert list((state / "checkpoints").rglob("objects/??/*"))
    assert list((state / "sessions").rglob(".summaries.json"))
    assert (state / "trust.json").exists()
    found = loose(state)
    if (tmp_path / "xdg-state").exists():
        found += loose(tmp_path / "xdg-state")
    assert found == [], "\n".join(found)
