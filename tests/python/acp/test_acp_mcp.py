"""MCP servers reach the real Claude Code ACP adapter at ``session/new``.

The adapter runs against the fake Anthropic API; the MCP server is the
SDK-written test server. The test observes both ends: ``mcpServers`` in the
``session/new`` tandem sends (ACP's stdio shape: command, args, env as a
name/value list), and the ``mcp__…`` tools in the tool list the adapter sends
to the model — so the agent really started and listed the server. A
discussion (isolated, read-only) gets the same servers. The adapter also
starts tandem's own editor server and its model's call to it is answered.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import test_acp_claude
from acp_helpers import RecordingSink, chat
from fakes.script import Reply, Script

from tandem.config.model import SettingsModel
from tandem.mcp.service import McpService

Claude = test_acp_claude.Claude
adapter = test_acp_claude.adapter  # the fixtures, shared
claude_factory = test_acp_claude.claude_factory
FAKE = Path(__file__).resolve().parents[2] / "fakes" / "mcp_server.py"


def test_enabled_mcp_servers_arrive_in_session_new(claude_factory: Any) -> None:
    c: Claude = claude_factory(Script([], default=Reply(text="OK")))
    settings = SettingsModel.model_validate({"mcp_servers": {
        "t": {"command": sys.executable, "args": [str(FAKE)], "env": {"MARK": "1"}},
        "off": {"command": sys.executable, "args": [str(FAKE)]}}})
    service = McpService()

    async def scenario() -> None:
        await service.set_enabled("sess", "off", False, settings)
        provider = c.provider(mcp_servers=service.acp_source("sess", lambda: settings))
        await c.turn(provider, chat(c.root, "hello"), RecordingSink())
        await c.turn(provider, chat(c.root, "discuss", read_only=True, isolated=True),
                     RecordingSink())
        await provider.close()

    asyncio.run(scenario())
    news = c.sent("session/new")
    assert len(news) == 2  # the root chat and the discussion
    for new in news:
        assert new["params"]["mcpServers"] == [{
            "name": "t", "command": sys.executable, "args": [str(FAKE)],
            "env": [{"name": "MARK", "value": "1"}]}]
    tools = {t["name"] for body in c.agent_bodies() for t in body["tools"]}
    print(f"\nmcp tools the adapter sent to the model: {sorted(t for t in tools if 'mcp' in t)}")
    assert "mcp__t__echo" in tools and "mcp__t__write_note" in tools
    assert not any("off" in t for t in tools)
    assert c.leftovers() == []


def test_the_real_adapter_calls_tandems_editor_server(claude_factory: Any) -> None:
    """The Claude Code adapter starts ``tandem-editor`` and its model's call is answered."""
    from fakes.script import Match, Step, ToolCallSpec
    from test_acp_editor_tools import StandInEmacs

    from tandem.mcp.instruments import EditorChannels

    script = Script([
        Step(match=Match(has_tools=True, last_user_contains="which buffers"),
             reply=Reply(text="Asking Emacs.", tool_calls=[
                 ToolCallSpec(name="mcp__tandem-editor__open_buffers", input={})])),
        Step(match=Match(has_tools=True), reply=Reply(text="Seen."))], default=Reply(text="OK"))
    c: Claude = claude_factory(script)
    (c.root / "a.py").write_text("x = 1\n")
    real = Path(c.root).resolve()
    editor = StandInEmacs(real, Path("/etc/hosts"))
    channels = EditorChannels(editor)

    async def scenario() -> Any:
        provider = c.provider(editor_tools=lambda root: channels.entries("sess", root))
        result = await c.turn(provider, chat(c.root, "which buffers are open?"),
                              RecordingSink("allow_once"))
        await provider.close()
        await channels.aclose()
        return result

    result = asyncio.run(scenario())
    assert result.outcome == "succeeded", result.error
    bodies = c.agent_bodies()
    tools = {t["name"] for body in bodies for t in body["tools"]}
    assert {f"mcp__tandem-editor__{n}" for n in ("diagnostics", "open_buffers")} <= tools
    answered = json.dumps(bodies[-1]["messages"])
    assert "a.py (python-mode, modified (unsaved edits))" in answered
    assert "/etc/hosts" not in answered
    assert [name for name, _ in editor.asked] == ["open_buffers"]
    assert c.leftovers() == []
