"""An ACP agent that uses the MCP servers it is given: a real process on the `acp` SDK.

Usage: ``python mcp_agent.py SCRIPT.json LOG.jsonl``. At each ``session/prompt``
it starts every stdio server of its ``session/new`` ``mcpServers`` with the
official ``mcp`` client (command, args, env as given), lists its tools and
makes the calls of SCRIPT ``{"calls": [{"tool": NAME, "arguments": {…}}, …]}``
(NAME unprefixed; servers without that tool are skipped). It logs
``{"method": "mcp-tools", "params": {server: [names]}}`` and one
``{"method": "mcp-call", "params": {server, tool, is_error, text}}`` per call
to LOG, and says each result as agent text (``TOOL -> TEXT``), so the client's
transcript shows what the agent got.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, run_agent, update_agent_message_text
from acp.schema import AgentCapabilities, InitializeResponse, NewSessionResponse, PromptResponse
from mcp.client.stdio import stdio_client

from mcp import ClientSession, StdioServerParameters


class McpAgent:
    """Follows SCRIPT against the MCP servers of each session; logs to LOG."""

    def __init__(self, script: dict[str, Any], log: Path) -> None:
        self.script = script
        self.log_path = log
        self.client: Any = None
        self.servers: dict[str, list[Any]] = {}

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    def _log(self, method: str, params: Any) -> None:
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"method": method, "params": params}, default=str) + "\n")

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=PROTOCOL_VERSION,
                                  agent_capabilities=AgentCapabilities())

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None,
                          **kwargs: Any) -> NewSessionResponse:
        session_id = f"s-{uuid.uuid4().hex[:8]}"
        self.servers[session_id] = list(mcp_servers or [])
        self._log("session/new", {"cwd": cwd, "servers": [
            {"name": s.name, "command": getattr(s, "command", None),
             "args": getattr(s, "args", None),
             "env": [e.name for e in getattr(s, "env", None) or []]}
            for s in self.servers[session_id]]})
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        for server in self.servers.get(session_id, []):
            if getattr(server, "command", None) is None:
                continue
            await self._use(session_id, server)
        return PromptResponse(stop_reason="end_turn")

    async def _use(self, session_id: str, server: Any) -> None:
        params = StdioServerParameters(command=server.command, args=list(server.args),
                                       env={e.name: e.value for e in server.env or []})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            listed = await mcp.list_tools()
            names = [t.name for t in listed.tools]
            read_only = {t.name: bool(t.annotations and t.annotations.readOnlyHint)
                         for t in listed.tools}
            self._log("mcp-tools", {"server": server.name, "tools": names,
                                    "read_only": read_only})
            for call in self.script.get("calls", []):
                if call["tool"] not in names:
                    continue
                result = await mcp.call_tool(call["tool"], call.get("arguments") or {})
                text = "".join(getattr(c, "text", "") for c in result.content)
                self._log("mcp-call", {"server": server.name, "tool": call["tool"],
                                       "is_error": result.isError, "text": text})
                await self.client.session_update(
                    session_id, update_agent_message_text(f"{call['tool']} -> {text}\n"))


async def main() -> None:
    """Run the agent on stdio."""
    script = json.loads(Path(sys.argv[1]).read_text())
    await run_agent(McpAgent(script, Path(sys.argv[2])))


if __name__ == "__main__":
    asyncio.run(main())
