"""The two ways to reach an MCP server: a child process over stdio, or streamable HTTP.

Both yield the SDK's stream pair for `mcp.ClientSession`. The stdio server is
started by tandem (not by the SDK's ``stdio_client``) so that it runs in its
own process group registered with `tandem.reaper` (it dies with the backend,
even on ``kill -9``), gets a scrubbed environment, and keeps its stderr tail
for the log.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import anyio
import httpx
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from tandem import reaper, secrets
from tandem.config.model import McpHttpServer, McpStdioServer
from tandem.providers.acp_process import AgentProcess

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception],
                MemoryObjectSendStream[SessionMessage]]


def server_environment(configured: Mapping[str, str],
                       base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A stdio server's environment: BASE without secrets, CONFIGURED on top, the owner mark."""
    env = secrets.child_env(base)
    env.update(configured)
    env.update(reaper.tracker().owner_env())
    return env


async def start_process(config: McpStdioServer, root: Path) -> AgentProcess:
    """Spawn CONFIG's program in ROOT (own process group, registered with the reaper)."""
    return await AgentProcess.start([config.command, *config.args],
                                    server_environment(config.env), root)


@contextlib.asynccontextmanager
async def process_streams(process: AgentProcess) -> AsyncIterator[Streams]:
    """Newline-delimited JSON-RPC over PROCESS's stdin and stdout, as SDK streams."""
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        async with read_send:
            while True:
                try:
                    line = await process.stdout.readline()
                except (ValueError, OSError) as exc:  # a line over the limit, a broken pipe
                    await read_send.send(exc)
                    break
                if not line:
                    break  # EOF: the session answers pending requests "Connection closed"
                if not line.strip():
                    continue
                try:
                    message = types.JSONRPCMessage.model_validate_json(line)
                except ValidationError as exc:
                    await read_send.send(exc)
                    continue
                await read_send.send(SessionMessage(message))

    async def writer() -> None:
        async with write_recv:
            async for item in write_recv:
                data = item.message.model_dump_json(by_alias=True, exclude_none=True)
                try:
                    process.stdin.write(data.encode() + b"\n")
                    await process.stdin.drain()
                except (OSError, RuntimeError):
                    return  # the process is gone; the reader sees EOF

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        try:
            yield read_recv, write_send
        finally:
            group.cancel_scope.cancel()


def http_client(config: McpHttpServer, connect_timeout: float) -> httpx.AsyncClient:
    """The HTTP client of CONFIG: its headers, bounded connect, long reads (SSE)."""
    return httpx.AsyncClient(
        headers=dict(config.headers),
        timeout=httpx.Timeout(30.0, connect=connect_timeout, read=300.0),
        trust_env=True,
    )
