"""``python -m tandem.mcp.instruments_server --socket PATH``: the editor tools as an MCP server.

A local ACP agent starts this process (tandem put it in ``session/new``'s
``mcpServers``, see `tandem.mcp.instruments`). It speaks MCP over stdio with
the official SDK's low-level server and answers every ``tools/list`` and
``tools/call`` by asking the backend over the Unix socket PATH, first sending
the token of the ``TANDEM_EDITOR_TOKEN`` environment variable. A call the
backend refuses or cannot answer (no Emacs, a busy Emacs, a path outside the
root) is an MCP tool error (``isError``) with the backend's sentence.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

SERVER_NAME = "tandem-editor"
"""The name ACP agents see (their tools are ``mcp__tandem-editor__diagnostics`` …)."""
TOKEN_ENV = "TANDEM_EDITOR_TOKEN"
"""The environment variable that carries the token to this process."""
MAX_REPLY = 8 << 20
"""Bytes of one reply line read from the backend."""
CALL_TIMEOUT = 60.0
"""Seconds one call waits for the backend (which bounds Emacs's time itself)."""


class Backend:
    """One authenticated connection to the backend's socket, opened on first use."""

    def __init__(self, path: str, token: str) -> None:
        self.path = path
        self.token = token
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()
        self._ids = 0

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_unix_connection(self.path, limit=MAX_REPLY)
        writer.write(json.dumps({"token": self.token}).encode() + b"\n")
        await writer.drain()
        if json.loads(await reader.readline() or b"{}").get("ok") is not True:
            writer.close()
            raise RuntimeError("the tandem backend refused this server's token")
        return reader, writer

    async def ask(self, request: dict[str, object]) -> dict[str, object]:
        """The backend's reply to REQUEST; raises `RuntimeError` when it is gone."""
        async with self._lock:
            self._ids += 1
            request = {**request, "id": self._ids}
            for attempt in (1, 2):  # a backend that restarted its listener: once more
                try:
                    if self._conn is None:
                        self._conn = await self._connect()
                    reader, writer = self._conn
                    writer.write(json.dumps(request).encode() + b"\n")
                    await writer.drain()
                    line = await asyncio.wait_for(reader.readline(), CALL_TIMEOUT)
                    if not line:
                        raise ConnectionError("the backend closed the connection")
                    reply = json.loads(line)
                    if not isinstance(reply, dict):
                        raise ValueError("not an object")
                    return reply
                except (OSError, ConnectionError, ValueError, TimeoutError) as exc:
                    self._conn = None
                    if attempt == 2:
                        raise RuntimeError(f"the tandem backend is unreachable: {exc}") from None
            raise AssertionError("unreachable")


def build(backend: Backend) -> Any:
    """The MCP server whose tools are the backend's editor tools."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    server: Server[Any, Any] = Server(SERVER_NAME)
    read = types.ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        reply = await backend.ask({"op": "list"})
        if reply.get("ok") is not True:
            raise RuntimeError(str(reply.get("error")))
        tools = reply.get("tools")
        return [types.Tool(name=t["name"], description=t["description"],
                           inputSchema=t["input_schema"], annotations=read)
                for t in (tools if isinstance(tools, list) else [])]

    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, object]) -> list[types.TextContent]:
        reply = await backend.ask({"op": "call", "tool": name, "arguments": arguments})
        if reply.get("ok") is not True:
            # Raised: the SDK answers a result with isError and this sentence.
            raise RuntimeError(str(reply.get("error")))
        return [types.TextContent(type="text", text=str(reply.get("text", "")))]

    return server


async def serve(path: str, token: str) -> None:
    """Serve MCP over stdio until the agent closes it."""
    from mcp.server.stdio import stdio_server

    server = build(Backend(path, token))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``--socket PATH``, the token from the environment."""
    parser = argparse.ArgumentParser(prog="python -m tandem.mcp.instruments_server")
    parser.add_argument("--socket", required=True, help="the backend's Unix socket")
    args = parser.parse_args(argv)
    token = os.environ.get(TOKEN_ENV)
    if not token:
        print(f"{TOKEN_ENV} is not set: started by tandem only", file=sys.stderr)
        return 2
    asyncio.run(serve(args.socket, token))
    return 0


if __name__ == "__main__":
    sys.exit(main())
