"""The two ways to reach an MCP server: a child process over stdio, or streamable HTTP.

Both yield the SDK's stream pair for `mcp.ClientSession`. The stdio server is
started by tandem (not by the SDK's ``stdio_client``) so that it runs in its
own process group registered with `tandem.reaper` (it dies with the backend,
even on ``kill -9``), gets a scrubbed environment, and keeps its stderr tail
for the log.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

import anyio
import httpx
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from tandem import reaper, secrets
from tandem.capped import cap
from tandem.config.model import McpHttpServer, McpStdioServer
from tandem.mcp.common import MAX_MESSAGE
from tandem.providers.acp_process import AgentProcess

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception],
                MemoryObjectSendStream[SessionMessage]]
Overflow = Callable[[], None]
"""Told when a message went past `MAX_MESSAGE` (the call waiting for it fails)."""
CHUNK = 1 << 16


class MessageTooLarge(httpx.ReadError):
    """An HTTP body or SSE event of an MCP server went past `MAX_MESSAGE`."""


def server_environment(configured: Mapping[str, str],
                       base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A stdio server's environment: BASE without secrets, CONFIGURED on top, the owner mark."""
    env = secrets.child_env(base)
    env.update(configured)
    env.update(reaper.tracker().owner_env())
    return env


async def start_process(config: McpStdioServer, root: Path) -> AgentProcess:
    """Spawn CONFIG's program in ROOT (own process group, registered with the reaper)."""
    # Lines are read in chunks (`bounded_lines`): the pipe's buffer stays small.
    return await AgentProcess.start([config.command, *config.args],
                                    server_environment(config.env), root, limit=4 * CHUNK)


async def bounded_lines(stream: asyncio.StreamReader, on_overflow: Overflow,
                        limit: int = MAX_MESSAGE) -> AsyncIterator[bytes]:
    """The lines of STREAM (without the newline), each at most LIMIT bytes.

    A longer line is dropped as it arrives (read in chunks, never kept) and
    ON_OVERFLOW is told once; reading goes on after its end.
    """
    buf = bytearray()
    skipping = False
    while chunk := await stream.read(CHUNK):
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not skipping and len(buf) + len(piece) > limit:
                skipping = True
                buf.clear()
                on_overflow()
            elif not skipping:
                buf += piece
            if end < 0:
                break
            if not skipping:
                yield bytes(buf)
            buf.clear()
            skipping = False
            start = end + 1
    if buf and not skipping:
        yield bytes(buf)


@contextlib.asynccontextmanager
async def process_streams(process: AgentProcess,
                          on_overflow: Overflow = lambda: None) -> AsyncIterator[Streams]:
    """Newline-delimited JSON-RPC over PROCESS's stdin and stdout, as SDK streams.

    A line over `MAX_MESSAGE` is dropped as it arrives and ON_OVERFLOW told.
    """
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        async with read_send:
            lines = bounded_lines(process.stdout, on_overflow)
            while True:
                try:
                    line = await anext(lines, None)
                except OSError as exc:  # a broken pipe
                    await read_send.send(exc)
                    break
                if line is None:
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


def http_client(config: McpHttpServer, connect_timeout: float,
                on_overflow: Overflow = lambda: None,
                limit: int = MAX_MESSAGE) -> httpx.AsyncClient:
    """The HTTP client of CONFIG: its headers, bounded connect, long reads (SSE).

    Every response body (each event of an event stream) is bounded by LIMIT
    while it is received; past it ON_OVERFLOW is told and the read fails.
    """
    def over() -> BaseException:
        on_overflow()
        return MessageTooLarge(f"an MCP message over {limit} bytes")

    async def bound(response: httpx.Response) -> None:
        cap(response, limit, over)

    return httpx.AsyncClient(
        headers=dict(config.headers),
        timeout=httpx.Timeout(30.0, connect=connect_timeout, read=300.0),
        trust_env=True,
        event_hooks={"response": [bound]},
    )
