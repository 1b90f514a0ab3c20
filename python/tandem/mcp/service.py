"""Per session: which MCP servers are enabled, their running connections, their tools.

Servers start lazily: at the first native turn of a session that has them
enabled, or when the user lists them with ``connect``. They stop with the
session (``sessions/close``) and with the backend. Every configured server is
enabled in a new session; ``mcp/disable`` takes one out of the session's
turns (native tools and ACP ``session/new`` alike).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tandem.config.model import SettingsModel
from tandem.mcp.adapter import adapt, token_estimate
from tandem.mcp.connection import McpConnection, McpServerError, Timeouts
from tandem.mcp.servers import ServerConfig, acp_server, configured, describe, fingerprint
from tandem.protocol.base import TandemError
from tandem.protocol.mcp import ServerRow
from tandem.providers.base import ToolSource, TurnRequest
from tandem.tools.base import Tool

SettingsOf = Callable[[], SettingsModel]


@dataclass
class _Seen:
    fingerprint: str
    tools: list[str]
    tokens: int


@dataclass
class SessionMcp:
    """The MCP state of one session."""

    disabled: set[str] = field(default_factory=set)
    connections: dict[str, McpConnection] = field(default_factory=dict)


class McpService:
    """The backend's MCP servers, per session."""

    def __init__(self, timeouts: Timeouts | None = None) -> None:
        self.timeouts = timeouts or Timeouts()
        self._sessions: dict[str, SessionMcp] = {}
        self._seen: dict[str, _Seen] = {}
        """The last tool list of each server name (shown while it is stopped)."""

    def _state(self, session: str) -> SessionMcp:
        return self._sessions.setdefault(session, SessionMcp())

    def enabled(self, session: str, servers: dict[str, ServerConfig]) -> dict[str, ServerConfig]:
        """SERVERS minus those disabled in SESSION."""
        off = self._state(session).disabled
        return {n: c for n, c in servers.items() if n not in off}

    async def _connection(self, session: str, name: str, config: ServerConfig,
                          root: Path) -> McpConnection:
        state = self._state(session)
        conn = state.connections.get(name)
        if conn is not None and (conn.fingerprint != fingerprint(config) or conn.root != root):
            await conn.stop()  # its settings entry changed: start the new one
            conn = None
        if conn is None:
            conn = McpConnection(name, config, root, self.timeouts)
            state.connections[name] = conn
        return conn

    async def start(self, session: str, name: str, config: ServerConfig,
                    root: Path) -> McpConnection:
        """SESSION's connection to NAME, started; McpServerError when it cannot start."""
        conn = await self._connection(session, name, config, root)
        try:
            await conn.ensure_started()
        finally:
            self._remember(conn)
        return conn

    def _remember(self, conn: McpConnection) -> None:
        if conn.status == "running":
            self._seen[conn.name] = _Seen(conn.fingerprint, [t.name for t in conn.tools],
                                          token_estimate(conn.name, conn.tools))

    async def tools_for(self, request: TurnRequest, settings: SettingsModel) -> list[Tool]:
        """The MCP tools of REQUEST's session (its enabled servers, started now if needed).

        A server that cannot start fails the turn with its name and reason
        (disable it with ``M-x tandem-mcp`` to go on without it).
        """
        servers = self.enabled(request.session_id, configured(settings))
        if not servers:
            return []
        names = sorted(servers)
        results = await asyncio.gather(
            *(self.start(request.session_id, n, servers[n], request.root) for n in names),
            return_exceptions=True)
        taken: set[str] = set()
        tools: list[Tool] = []
        for result in results:
            if isinstance(result, McpServerError):
                raise McpServerError(f"{result}; disabling the server for this session lets "
                                     "turns run without it")
            if isinstance(result, BaseException):
                raise result
            tools.extend(adapt(result, taken))
        return tools

    def acp_servers(self, session: str, settings: SettingsModel) -> list[Any]:
        """SESSION's enabled servers in ACP's ``session/new`` shape."""
        return [acp_server(n, c) for n, c in
                sorted(self.enabled(session, configured(settings)).items())]

    def tool_source(self, settings_of: SettingsOf) -> ToolSource:
        """A native provider's tool source: REQUEST → MCP tools (see `tools_for`)."""
        async def source(request: TurnRequest) -> list[Tool]:
            return await self.tools_for(request, settings_of())
        return source

    def acp_source(self, session: str, settings_of: SettingsOf) -> Callable[[], list[Any]]:
        """An ACP provider's ``mcpServers`` source for SESSION."""
        return lambda: self.acp_servers(session, settings_of())

    # -- what the user sees and changes -----------------------------------

    async def rows(self, session: str, settings: SettingsModel, root: Path,
                   connect: bool = False) -> list[ServerRow]:
        """Every configured server of SESSION; CONNECT starts the enabled ones first."""
        servers = configured(settings)
        state = self._state(session)
        if connect:
            enabled = self.enabled(session, servers)
            await asyncio.gather(*(self.start(session, n, c, root) for n, c in enabled.items()),
                                 return_exceptions=True)
        return [self._row(name, config, state) for name, config in sorted(servers.items())]

    def _row(self, name: str, config: ServerConfig, state: SessionMcp) -> ServerRow:
        conn = state.connections.get(name)
        if conn is not None and conn.fingerprint != fingerprint(config):
            conn = None
        status = "stopped"
        if conn is not None:
            status = "running" if conn.running else conn.status
        row = ServerRow(name=name, kind=config.type, target=describe(config),
                        enabled=name not in state.disabled, status=status,
                        error=conn.error if conn is not None else None)
        if conn is not None and status == "running":
            row.tools = [t.name for t in conn.tools]
            row.tokens = token_estimate(name, conn.tools)
        elif (seen := self._seen.get(name)) is not None and seen.fingerprint == fingerprint(
                config):
            row.tools, row.tokens, row.stale = seen.tools, seen.tokens, True
        return row

    def known(self, name: str, settings: SettingsModel) -> ServerConfig:
        """The configured server NAME; a not-found error naming the configured ones."""
        servers = configured(settings)
        if name not in servers:
            known = ", ".join(sorted(servers)) or "none configured"
            raise TandemError("not-found", f"no MCP server {name!r} ({known})")
        return servers[name]

    async def set_enabled(self, session: str, name: str, enabled: bool,
                          settings: SettingsModel) -> None:
        """Enable or disable NAME in SESSION; a disabled server is stopped."""
        self.known(name, settings)
        state = self._state(session)
        if enabled:
            state.disabled.discard(name)
            return
        state.disabled.add(name)
        conn = state.connections.pop(name, None)
        if conn is not None:
            await conn.stop()

    async def restart(self, session: str, name: str, settings: SettingsModel,
                      root: Path) -> McpConnection:
        """Stop NAME in SESSION and start it again (McpServerError when it cannot)."""
        config = self.known(name, settings)
        conn = self._state(session).connections.pop(name, None)
        if conn is not None:
            await conn.stop()
        return await self.start(session, name, config, root)

    def log(self, session: str, name: str) -> list[str]:
        """What happened to NAME in SESSION (start, stop, failures, stderr tail)."""
        conn = self._state(session).connections.get(name)
        return conn.log_lines() if conn is not None else []

    async def close_session(self, session: str) -> None:
        """Stop every server of SESSION."""
        state = self._sessions.pop(session, None)
        if state is not None:
            await asyncio.gather(*(c.stop() for c in state.connections.values()),
                                 return_exceptions=True)

    async def aclose(self) -> None:
        """Stop every server (the backend stops)."""
        for session in list(self._sessions):
            await self.close_session(session)
