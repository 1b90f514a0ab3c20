"""What the MCP service and its methods need without loading the MCP SDK.

The SDK (``mcp``) takes ~0.5 s to import; `tandem ask` and `tandem serve`'s
port line must not pay it when no MCP server is used, so the connection and
the adapter (which import it) load with the first server that starts.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_MESSAGE = 8 << 20
"""Bytes of one message from an MCP server (a stdio line, an HTTP body or SSE event).

Longer ones are dropped as they arrive, never read whole: the call waiting
for it fails with `too_large`'s sentence. What the model sees of a result is
cut far shorter (``native.output_cap``); this bounds what is received.
"""


def too_large(limit: int = MAX_MESSAGE) -> str:
    """Why a call failed whose answer went past LIMIT bytes."""
    return (f"its answer is over the {limit >> 20} MiB limit on one MCP message; it was "
            "dropped as it arrived")


class McpServerError(Exception):
    """An MCP server failed to start, died, timed out or refused a call (the message says which)."""


@dataclass(frozen=True)
class Timeouts:
    """Bounds on waiting for a server."""

    start: float = 30.0
    """``initialize`` and the first ``tools/list``."""
    call: float = 120.0
    """One ``tools/call``."""
