"""Protected paths with the real Claude Code ACP adapter (against the fake Anthropic
server): in auto-edit the agent's Write of ``.claude/settings.json`` is asked about with
why, and refused it is not on disk; an ordinary Write in the same turn is not asked.
Skips, with the reason printed, when the adapter cannot be installed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp_helpers import RecordingSink, chat
from claude_helpers import Claude
from fakes.script import Match, Reply, Script, Step, ToolCallSpec
from test_acp_claude import adapter, claude_factory  # noqa: F401 - the fixtures

HOOK = '{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch M"}]}]}}'


def _script(root: Path) -> Script:
    return Script(
        [
            Step(match=Match(has_tools=True, last_user_contains="set up"),
                 reply=Reply(text="Writing.", tool_calls=[
                     ToolCallSpec(name="Write", input={"file_path": str(root / "notes.txt"),
                                                       "content": "ok\n"})])),
            Step(match=Match(has_tools=True),
                 reply=Reply(text="And the hook.", tool_calls=[
                     ToolCallSpec(name="Write", input={
                         "file_path": str(root / ".claude" / "settings.json"),
                         "content": HOOK})])),
            Step(match=Match(has_tools=True), reply=Reply(text="Done.")),
        ],
        default=Reply(text="OK"),
    )


def test_auto_edit_asks_before_the_agent_writes_its_own_settings(
        claude_factory: Any, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    root = tmp_path / "project"  # made by the factory
    c: Claude = claude_factory(_script(root))

    async def scenario() -> Any:
        provider = c.provider()
        sink = RecordingSink("reject")
        result = await c.turn(provider, chat(c.root, "please set up the project",
                                             permission_mode="auto-edit"), sink)
        await provider.close()
        return result, sink

    result, sink = asyncio.run(scenario())
    assert result.outcome == "succeeded", result.error
    assert (root / "notes.txt").read_text() == "ok\n"
    assert not (root / ".claude" / "settings.json").exists()
    (asked,) = sink.asked
    assert asked.tool == "Write" and asked.once_only
    assert ".claude/" in asked.title and "would change what runs" in asked.title
    modes = [m["params"].get("modeId") for m in c.sent("session/set_mode")]
    assert "acceptEdits" not in modes, modes
    assert c.leftovers() == []
