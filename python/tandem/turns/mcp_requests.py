"""What the MCP methods ask: which servers a session's turns carry, and what they cost.

They sit with the turns (not in `tandem.mcp`) because they need the
session's root and effective settings, which the sessions resolve; the MCP
package itself stays below the turn layer.
"""

from __future__ import annotations

from pathlib import Path

from tandem.config.model import SettingsModel
from tandem.mcp.common import McpServerError
from tandem.protocol.base import TandemError
from tandem.protocol.mcp import ServerLog, ServerRow, ServersReply
from tandem.turns.service import TurnService


def _context(turns: TurnService, session: str) -> tuple[str, Path, SettingsModel]:
    sessions = turns.sessions
    journal = sessions.journal(session)
    root = sessions.root_of(journal)
    return journal.id, root, sessions.resolved(root).settings


async def servers(turns: TurnService, session: str, connect: bool) -> ServersReply:
    """Every configured MCP server of SESSION: status, tools, token cost per request."""
    sid, root, settings = _context(turns, session)
    rows = await turns.mcp.rows(sid, settings, root, connect=connect)
    return ServersReply(session=sid, servers=rows,
                        estimate="characters of the tool definitions' JSON / 4")


async def _row(turns: TurnService, session: str, name: str) -> ServerRow:
    _, root, settings = _context(turns, session)
    rows = await turns.mcp.rows(session, settings, root)
    return next(r for r in rows if r.name == name)


async def set_enabled(turns: TurnService, session: str, name: str, on: bool) -> ServerRow:
    """Let SESSION's turns use server NAME (ON) or take it out and stop it; its row."""
    sid, _, settings = _context(turns, session)
    await turns.mcp.set_enabled(sid, name, on, settings)
    return await _row(turns, sid, name)


async def restart(turns: TurnService, session: str, name: str) -> ServerRow:
    """Stop server NAME of SESSION and start it again; its row."""
    sid, root, settings = _context(turns, session)
    try:
        await turns.mcp.restart(sid, name, settings, root)
    except McpServerError as exc:
        raise TandemError("mcp-failed", str(exc)) from None
    return await _row(turns, sid, name)


def server_log(turns: TurnService, session: str, name: str) -> ServerLog:
    """What happened to server NAME in SESSION: starts, stops, failures, stderr."""
    sid, _, settings = _context(turns, session)
    turns.mcp.known(name, settings)
    return ServerLog(name=name, lines=turns.mcp.log(sid, name))
