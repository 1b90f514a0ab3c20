"""An MCP server's 32 MiB result is bounded while it is received, over stdio and HTTP.

The SDK-written test server answers ``huge`` with one 32 MiB message. The
call fails with a sentence naming the server, the tool and the limit; the
bytes are dropped as they arrive (the Python heap's peak during the call
stays far below the message), and the same connection answers the next call.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from mcp_helpers import fake_server

from tandem.config.model import McpHttpServer
from tandem.mcp.connection import McpConnection, McpServerError, Timeouts

pytestmark = pytest.mark.anyio

HUGE_MB = 32
HEAP_CEILING = 16 << 20


async def _check(conn: McpConnection) -> None:
    await conn.ensure_started()
    try:
        tracemalloc.start()
        try:
            with pytest.raises(McpServerError) as err:
                await conn.call("huge", {"megabytes": HUGE_MB})
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        print(f"{conn.name}: heap peak {peak >> 20} MiB during a {HUGE_MB} MiB result")
        assert str(err.value) == (f"MCP server {conn.name}: huge: its answer is over the 8 MiB "
                                  "limit on one MCP message; it was dropped as it arrived")
        assert peak < HEAP_CEILING, f"{peak >> 20} MiB held while receiving"
        answer = await conn.call("echo", {"text": "still here"})
        assert answer.content[0].text == "echo: still here"  # type: ignore[union-attr]
    finally:
        await conn.stop()


async def test_a_huge_stdio_result_is_dropped_as_it_arrives(tmp_path: Path) -> None:
    await _check(McpConnection("big", fake_server(), tmp_path, Timeouts(start=30, call=60)))


async def test_a_huge_http_result_is_dropped_as_it_arrives(tmp_path: Path,
                                                           http_server: str) -> None:
    config = McpHttpServer(type="http", url=http_server)
    await _check(McpConnection("bigweb", config, tmp_path, Timeouts(start=30, call=60)))
