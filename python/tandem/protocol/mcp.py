"""Params and replies of the MCP methods (``mcp/…``): a session's servers and their cost."""

from __future__ import annotations

from pydantic import BaseModel

from tandem.protocol.base import Params, Reply


class ListParams(Params):
    """``session``; ``connect`` starts its enabled servers first (to show their tools)."""

    session: str
    connect: bool = False


class ServerParams(Params):
    """One server NAME of SESSION."""

    session: str
    name: str


class ServerRow(BaseModel):
    """One server as ``mcp/list`` shows it."""

    name: str
    kind: str
    """``stdio`` or ``http``."""
    target: str
    """The command line or the URL."""
    enabled: bool
    status: str
    tools: list[str] | None = None
    """Tool names as the model sees them; None when never listed."""
    tokens: int | None = None
    """Estimated tokens the definitions cost per request (characters / 4)."""
    stale: bool = False
    """TOOLS and TOKENS are from an earlier run (the server is not running now)."""
    error: str | None = None


class ServersReply(Reply):
    """``mcp/list``: every configured server of the session, and how tokens are estimated."""

    session: str
    servers: list[ServerRow]
    estimate: str


class ServerLog(Reply):
    """``mcp/log``: what happened to one server (starts, stops, failures, stderr tail)."""

    name: str
    lines: list[str]
