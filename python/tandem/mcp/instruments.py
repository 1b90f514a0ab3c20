"""The editor tools for ACP agents: tandem's own MCP server and its backchannel.

A local ACP agent gets, in ``session/new``'s ``mcpServers``, one more stdio
server, ``tandem-editor``: ``python -m tandem.mcp.instruments_server`` with a
socket path argument and a token in its environment. That process answers
the agent's MCP calls by asking the backend over the socket, and the backend
runs the same read-class editor tools as native turns
(`tandem.tools.instruments`), which ask Emacs.

The backchannel, per session and root: a Unix socket in a fresh 0700
folder (``tempfile.mkdtemp``, in ``$XDG_RUNTIME_DIR`` when set), the socket
itself 0600, and a random token
(32 bytes) the peer must send first. Everything before the token is
untrusted: the first line is at most `MAX_LINE` bytes and must come within
`AUTH_TIMEOUT` seconds, a wrong token closes the connection, and every
request after it is validated (a JSON object, a known editor tool, its
arguments through the tool's own model). Only the editor tools are
reachable: each reads, confined to the root. Lines are JSON::

    → {"token": "…"}
    ← {"ok": true}
    → {"id": 1, "op": "list"}
    ← {"id": 1, "ok": true, "tools": [{"name", "description", "input_schema"}, …]}
    → {"id": 2, "op": "call", "tool": "outline", "arguments": {"path": "a.py"}}
    ← {"id": 2, "ok": true, "text": "…"}  or  {"id": 2, "ok": false, "error": "…"}

The remote engine gets none of this: a local editor is never opened to a
remote host.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import secrets
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tandem.editor import EditorBridge
from tandem.mcp.instruments_server import SERVER_NAME, TOKEN_ENV
from tandem.tools.base import ToolContext, ToolError
from tandem.tools.instruments import EDITOR_TOOLS

log = logging.getLogger("tandem.mcp")
MAX_LINE = 256 * 1024
"""Bytes of one request line (before authentication too); a longer one closes."""
AUTH_TIMEOUT = 5.0
"""Seconds a peer has to send its token."""
MAX_PEERS = 16
"""Connections one channel serves at once; more are closed at once."""

_TOOLS = {t.name: t for t in EDITOR_TOOLS}


def tool_list() -> list[dict[str, object]]:
    """The editor tools as the MCP server offers them."""
    return [{"name": t.name, "description": t.description, "input_schema": t.schema()}
            for t in EDITOR_TOOLS]


async def answer(editor: EditorBridge | None, root: Path, request: Any) -> dict[str, object]:
    """The reply to one authenticated REQUEST (already parsed JSON) for ROOT."""
    if not isinstance(request, dict):
        return {"ok": False, "error": "a request is a JSON object"}
    rid = request.get("id")
    reply: dict[str, object] = {"id": rid if isinstance(rid, int) else None}
    op = request.get("op")
    if op == "list":
        return {**reply, "ok": True, "tools": tool_list()}
    if op != "call":
        return {**reply, "ok": False, "error": f"unknown op {op!r}"}
    name = request.get("tool")
    tool = _TOOLS.get(name) if isinstance(name, str) else None
    if tool is None:
        return {**reply, "ok": False, "error": f"unknown tool {name!r}"}
    arguments = request.get("arguments")
    try:
        args = tool.args.model_validate(arguments if arguments is not None else {})
        ctx = ToolContext(root=root, editor=editor)
        return {**reply, "ok": True, "text": await tool.run(ctx, args)}
    except ValidationError as exc:
        return {**reply, "ok": False,
                "error": f"invalid arguments for {tool.name}: {exc.error_count()} error(s): "
                         + "; ".join(str(e["msg"]) for e in exc.errors())}
    except ToolError as exc:
        return {**reply, "ok": False, "error": str(exc)}
    except OSError as exc:
        return {**reply, "ok": False, "error": f"{tool.name}: {exc.strerror or exc}"}


@dataclass
class Channel:
    """One listening socket for one session and root."""

    root: Path
    folder: Path
    path: Path
    token: str
    sock: socket.socket
    server: asyncio.AbstractServer | None = None
    peers: set[asyncio.Task[None]] = field(default_factory=set)

    def entry(self) -> Any:
        """This channel's MCP server as an ACP ``session/new`` entry."""
        from acp.schema import EnvVariable, McpServerStdio

        return McpServerStdio(
            name=SERVER_NAME, command=sys.executable,
            args=["-m", "tandem.mcp.instruments_server", "--socket", str(self.path)],
            env=[EnvVariable(name=TOKEN_ENV, value=self.token)])


class EditorChannels:
    """The sessions' backchannels: opened with a session's first ACP ``session/new``."""

    def __init__(self, editor: EditorBridge | None) -> None:
        self.editor = editor
        self._open: dict[tuple[str, Path], Channel] = {}

    def entries(self, session: str, root: Path) -> list[Any]:
        """The ``mcpServers`` entry of SESSION's editor server for ROOT (opened on first use).

        Called from the event loop; a failure to open is logged and offers no server
        (the agent's other tools still work)."""
        key = (session, Path(os.path.realpath(root)))
        channel = self._open.get(key)
        if channel is None:
            try:
                channel = self._start(key[1])
            except OSError as exc:
                log.warning("editor tools for ACP: no socket: %s", exc)
                return []
            self._open[key] = channel
        return [channel.entry()]

    def _start(self, root: Path) -> Channel:
        # The user's runtime folder (cleared at logout) when there is one: a backend
        # killed with SIGKILL leaves its folder behind.
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        base = runtime if runtime and os.path.isdir(runtime) else None
        folder = Path(tempfile.mkdtemp(prefix="tandem-editor-", dir=base))  # 0700
        path = folder / "s"
        if len(os.fsencode(path)) > 100:  # sun_path is ~108 bytes
            shutil.rmtree(folder, ignore_errors=True)
            folder = Path(tempfile.mkdtemp(prefix="tandem-editor-", dir="/tmp"))
            path = folder / "s"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
            os.chmod(path, 0o600)
            sock.listen(MAX_PEERS)
            sock.setblocking(False)
        except OSError:
            sock.close()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        channel = Channel(root, folder, path, secrets.token_urlsafe(32), sock)

        async def serve() -> None:
            channel.server = await asyncio.start_unix_server(
                lambda r, w: self._peer(channel, r, w), sock=sock, limit=MAX_LINE)

        # Bound and listening already: a peer that connects first waits in the backlog.
        asyncio.get_running_loop().create_task(serve())
        return channel

    async def _peer(self, channel: Channel, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is None or len(channel.peers) >= MAX_PEERS:
            writer.close()
            return
        channel.peers.add(task)
        try:
            await self._serve_peer(channel, reader, writer)
        except (ValueError, ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass  # an over-long line, a peer gone, a token too slow: the connection ends
        finally:
            channel.peers.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve_peer(self, channel: Channel, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        first = await asyncio.wait_for(reader.readline(), AUTH_TIMEOUT)
        try:
            hello = json.loads(first)
        except ValueError:
            return
        token = hello.get("token") if isinstance(hello, dict) else None
        if not isinstance(token, str) or not hmac.compare_digest(
                token.encode(), channel.token.encode()):
            return
        writer.write(b'{"ok": true}\n')
        await writer.drain()
        while line := await reader.readline():
            try:
                request = json.loads(line)
            except ValueError:
                reply: dict[str, object] = {"ok": False, "error": "not JSON"}
            else:
                reply = await answer(self.editor, channel.root, request)
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()

    async def close_session(self, session: str) -> None:
        """Close SESSION's channels and remove their sockets."""
        for key in [k for k in self._open if k[0] == session]:
            await self._close(self._open.pop(key))

    async def aclose(self) -> None:
        """Close every channel (the backend stops)."""
        for key in list(self._open):
            await self._close(self._open.pop(key))

    async def _close(self, channel: Channel) -> None:
        if channel.server is not None:
            channel.server.close()
        channel.sock.close()
        for task in list(channel.peers):
            task.cancel()
        shutil.rmtree(channel.folder, ignore_errors=True)
