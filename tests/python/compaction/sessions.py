"""Building sessions for the compaction tests through the real turn engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tandem.adapters.sessions import new
from tandem.app import App
from tandem.protocol.sessions import NewParams
from tandem.providers.base import Message
from tandem.turns.engine import DirectiveFrame, TurnEnded, TurnSpec


async def new_session(app: App, project: Path) -> str:
    """Create a session in PROJECT and return its id."""
    return (await new(app, NewParams(cwd=str(project)))).id


async def chat(app: App, session: str, text: str, provider: str = "openai:gpt-test"
               ) -> TurnEnded:
    """Run one chat turn to its end."""
    engine = app.turns.engine
    turn = await engine.accept(TurnSpec(session=session, text=text, provider=provider))
    return await engine.wait(session, turn)


async def directive(app: App, session: str, prompt: str, provider: str = "openai:gpt-test"
                    ) -> TurnEnded:
    """Run one directive turn (isolated prompt, boundary entries) to its end."""
    engine = app.turns.engine
    turn = await engine.accept(TurnSpec(
        session=session, text=prompt, provider=provider,
        messages=[Message(role="user", text=prompt)],
        directive=DirectiveFrame("w1", "D1", "discuss", None), read_only=True))
    return await engine.wait(session, turn)


def journal_path(app: App, session: str) -> Path:
    """The journal file of SESSION."""
    return Path(app.sessions.journal(session).path)


def entries(app: App, session: str) -> list[dict[str, Any]]:
    """Every entry of SESSION's journal, as written."""
    lines = journal_path(app, session).read_text().splitlines()[1:]
    return [json.loads(line) for line in lines]
