"""MCP methods for Emacs: which servers a session's turns carry, and what they cost.

They live with the turns (not in `tandem.mcp`) because they need the
session's root and effective settings, which the turn service resolves; the
MCP package itself stays below the turn layer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tandem.config.model import SettingsModel
from tandem.mcp.common import McpServerError
from tandem.mcp.service import ServerRow
from tandem.protocol.base import MethodSpec, Params, TandemError

if TYPE_CHECKING:
    from tandem.app import App


class ListParams(Params):
    """``session``; ``connect`` starts its enabled servers first (to show their tools)."""

    session: str
    connect: bool = False


class ServerParams(Params):
    """One server NAME of SESSION."""

    session: str
    name: str


def _context(app: App, session: str) -> tuple[str, Path, SettingsModel]:
    sessions = app.sessions
    journal = sessions.journal(session)
    root = sessions.root_of(journal)
    return journal.id, root, sessions.resolved(root).settings


async def list_servers(app: App, p: ListParams) -> dict[str, Any]:
    """Every configured MCP server of SESSION: status, tools, token cost per request."""
    session, root, settings = _context(app, p.session)
    rows = await app.turns.mcp.rows(session, settings, root, connect=p.connect)
    return {"session": session, "servers": [r.model_dump() for r in rows],
            "estimate": "characters of the tool definitions' JSON / 4"}


async def _row(app: App, session: str, name: str) -> ServerRow:
    _, root, settings = _context(app, session)
    rows = await app.turns.mcp.rows(session, settings, root)
    return next(r for r in rows if r.name == name)


async def enable(app: App, p: ServerParams) -> ServerRow:
    """Let SESSION's turns use server NAME again."""
    session, _, settings = _context(app, p.session)
    await app.turns.mcp.set_enabled(session, p.name, True, settings)
    return await _row(app, session, p.name)


async def disable(app: App, p: ServerParams) -> ServerRow:
    """Take server NAME out of SESSION's turns (and stop it)."""
    session, _, settings = _context(app, p.session)
    await app.turns.mcp.set_enabled(session, p.name, False, settings)
    return await _row(app, session, p.name)


async def restart(app: App, p: ServerParams) -> ServerRow:
    """Stop server NAME of SESSION and start it again."""
    session, root, settings = _context(app, p.session)
    try:
        await app.turns.mcp.restart(session, p.name, settings, root)
    except McpServerError as exc:
        raise TandemError("mcp-failed", str(exc)) from None
    return await _row(app, session, p.name)


async def server_log(app: App, p: ServerParams) -> dict[str, Any]:
    """What happened to server NAME in SESSION: starts, stops, failures, stderr."""
    session, _, settings = _context(app, p.session)
    app.turns.mcp.known(p.name, settings)
    return {"name": p.name, "lines": app.turns.mcp.log(session, p.name)}


METHODS = [
    MethodSpec("mcp/list", ListParams, list_servers,
               "A session's MCP servers: status, tools, tokens per request."),
    MethodSpec("mcp/enable", ServerParams, enable, "Use an MCP server in a session's turns."),
    MethodSpec("mcp/disable", ServerParams, disable, "Stop using an MCP server in a session."),
    MethodSpec("mcp/restart", ServerParams, restart, "Restart a session's MCP server."),
    MethodSpec("mcp/log", ServerParams, server_log, "An MCP server's log in a session."),
]
