"""MCP servers reach the real Claude Code ACP adapter at ``session/new``.

The adapter runs against the fake Anthropic API; the MCP server is the
SDK-written test server. The test observes both ends: ``mcpServers`` in the
``session/new`` tandem sends (ACP's stdio shape: command, args, env as a
name/value list), and the ``mcp__…`` tools in the tool list the adapter sends
to the model — so the agent really started and listed the server. A
discussion (isolated, read-only) gets the same servers.
"""

from __future__ import annotations

import asyncio
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
