"""Attaching or detaching a session is refused while a turn (or rewind) holds it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.adapters.remote import attach, detach, target
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.protocol.remote import AttachParams, SessionParams
from tandem.protocol.sessions import NewParams
from tandem.turns.engine import TurnSpec

from .fake_server import FakeAgentServer

pytestmark = pytest.mark.anyio
PROVIDER = "openai:gpt-test"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository with one committed file."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i"],
                   cwd=root, check=True)
    return root


async def test_attach_and_detach_refused_while_a_turn_runs(
        tmp_path: Path, project: Path, fake: FakeAgentServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    app = App(home=tmp_path / "home")
    with FakeOpenAI([Reply(text="slow", stall=True)]) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        try:
            sid = (await new(app, NewParams(cwd=str(project)))).id
            engine = app.turns.engine
            turn = await engine.accept(TurnSpec(session=sid, text="one", provider=PROVIDER))
            params = AttachParams(session=sid, host="box", url=fake.url, working_dir="w")
            with pytest.raises(TandemError) as err:
                await attach(app, params)
            assert err.value.code == "busy"
            assert "attach" in err.value.message and sid in err.value.message
            with pytest.raises(TandemError) as err:
                await detach(app, SessionParams(session=sid))
            assert err.value.code == "busy"
            # Nothing was recorded: the target is unchanged (none).
            assert await target(app, SessionParams(session=sid)) is None
            engine.cancel(sid)
            assert (await engine.wait(sid, turn)).outcome == "aborted"
            # Once the turn ended, both go through.
            got = await attach(app, params)
            assert got.resolved_working_dir == f"{fake.home}/w"
            async with app.gate.hold(sid, "rewind"):
                with pytest.raises(TandemError) as err:
                    await detach(app, SessionParams(session=sid))
                assert err.value.code == "busy" and "rewound" in err.value.message
            assert (await detach(app, SessionParams(session=sid))).root is True
        finally:
            await app.turns.aclose()
