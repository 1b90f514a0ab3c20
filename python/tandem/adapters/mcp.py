"""MCP methods (``mcp/…``): which servers a session's turns carry, and what they cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.protocol.base import MethodSpec
from tandem.protocol.mcp import ListParams, ServerLog, ServerParams, ServerRow, ServersReply
from tandem.turns import mcp_requests

if TYPE_CHECKING:
    from tandem.app import App


async def list_servers(app: App, p: ListParams) -> ServersReply:
    """Every configured MCP server of SESSION: status, tools, token cost per request."""
    return await mcp_requests.servers(app.turns, p.session, p.connect)


async def enable(app: App, p: ServerParams) -> ServerRow:
    """Let SESSION's turns use server NAME again."""
    return await mcp_requests.set_enabled(app.turns, p.session, p.name, True)


async def disable(app: App, p: ServerParams) -> ServerRow:
    """Take server NAME out of SESSION's turns (and stop it)."""
    return await mcp_requests.set_enabled(app.turns, p.session, p.name, False)


async def restart(app: App, p: ServerParams) -> ServerRow:
    """Stop server NAME of SESSION and start it again."""
    return await mcp_requests.restart(app.turns, p.session, p.name)


async def server_log(app: App, p: ServerParams) -> ServerLog:
    """What happened to server NAME in SESSION: starts, stops, failures, stderr."""
    return mcp_requests.server_log(app.turns, p.session, p.name)


METHODS = [
    MethodSpec("mcp/list", ListParams, list_servers,
               "A session's MCP servers: status, tools, tokens per request."),
    MethodSpec("mcp/enable", ServerParams, enable, "Use an MCP server in a session's turns."),
    MethodSpec("mcp/disable", ServerParams, disable, "Stop using an MCP server in a session."),
    MethodSpec("mcp/restart", ServerParams, restart, "Restart a session's MCP server."),
    MethodSpec("mcp/log", ServerParams, server_log, "An MCP server's log in a session."),
]
