"""Building sessions whose turns edit files, through the real turn engine and real HTTP."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec

from tandem.adapters.sessions import new
from tandem.app import App
from tandem.protocol.sessions import NewParams
from tandem.providers.base import Message
from tandem.turns.engine import DirectiveFrame, TurnEnded, TurnSpec

PROVIDER = "openai:gpt-test"


def use(fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the OpenAI provider at FAKE."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def writes(*files: tuple[str, str], text: str = "writing") -> list[Reply]:
    """Two replies: the model writes FILES (path, content), then says it is done."""
    calls = [ToolCallSpec(name="write_file", input={"path": p, "content": c}) for p, c in files]
    return [Reply(text=text, tool_calls=calls), Reply(text="done")]


async def new_session(app: App, project: Path) -> str:
    """Create a session in PROJECT and return its id."""
    return (await new(app, NewParams(cwd=str(project)))).id


async def chat(app: App, session: str, text: str) -> TurnEnded:
    """Run one chat turn (auto-edit) to its end."""
    engine = app.turns.engine
    turn = await engine.accept(TurnSpec(session=session, text=text, provider=PROVIDER,
                                        permission_mode="auto-edit"))
    return await engine.wait(session, turn)


async def directive(app: App, session: str, prompt: str, attempt: int | None = 1) -> TurnEnded:
    """Run one directive implementation turn (boundary entries, auto-edit) to its end."""
    engine = app.turns.engine
    turn = await engine.accept(TurnSpec(
        session=session, text=prompt, provider=PROVIDER, permission_mode="auto-edit",
        messages=[Message(role="user", text=prompt)],
        directive=DirectiveFrame("w1", "D1", "implement", attempt)))
    return await engine.wait(session, turn)


def journal_path(app: App, session: str) -> Path:
    """The journal file of SESSION."""
    return Path(app.sessions.journal(session).path)


def entries(app: App, session: str) -> list[dict[str, Any]]:
    """Every entry of SESSION's journal, as written."""
    lines = journal_path(app, session).read_text().splitlines()[1:]
    return [json.loads(line) for line in lines]


def tree(root: Path) -> dict[str, tuple[str, int]]:
    """(SHA-256, mode) of every file under ROOT outside ROOT/.git, by relative path."""
    out: dict[str, tuple[str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not (d == ".git" and Path(dirpath) == root)]
        for name in filenames:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = (hashlib.sha256(p.read_bytes()).hexdigest(),
                                             p.stat().st_mode)
    return out
