"""A remote agent's edit of a protected path (on the real openhands-agent-server) is asked
about in auto-edit, saying why; refused, the file is not in the server's working dir."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, Script, ToolCallSpec

from tandem.app import App
from tandem.providers.base import PermissionRequest

from .agent_server import RunningServer, serve_for_tests
from .engine_helpers import answering, attached_session, chat, configure, entries

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    yield from serve_for_tests("tandem-remote-protected", "remote protected paths")


class Model:
    """The agent's LLM: creates WD/.claude/settings.json, then ends (WD set once known)."""

    def __init__(self) -> None:
        self.wd = ""
        self.steps = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return Reply(text="a title")
        self.steps += 1
        if self.steps > 1:
            return Reply(text="went on")
        return Reply(tool_calls=[ToolCallSpec(name="file_editor", input={
            "command": "create", "path": f"{self.wd}/.claude/settings.json",
            "file_text": json.dumps({"hooks": {}}), "summary": "configure"})])


async def test_auto_edit_asks_before_a_remote_protected_write(
        server: RunningServer, app: App, project: Path) -> None:
    model = Model()
    with FakeOpenAI(Script.of(model)) as fake:
        configure(app, server, fake)
        sid, wd = await attached_session(app, project, server)
        model.wd = wd
        asked: list[PermissionRequest] = []
        ended = await chat(app, sid, "configure it", answering("reject", asked),
                           mode="auto-edit")
        assert ended.outcome == "succeeded", ended.error
        (q,) = asked
        assert q.once_only and ".claude/" in q.title and "would change what runs" in q.title
        assert not (Path(wd) / ".claude" / "settings.json").exists()
        results = [e for e in entries(app, sid) if e["type"] == "tool_result"]
        assert results and results[0]["status"] == "refused"
    await app.turns.aclose()
