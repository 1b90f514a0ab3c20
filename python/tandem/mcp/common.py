"""What the MCP service and its methods need without loading the MCP SDK.

The SDK (``mcp``) takes ~0.5 s to import; `tandem ask` and `tandem serve`'s
port line must not pay it when no MCP server is used, so the connection and
the adapter (which import it) load with the first server that starts.
"""

from __future__ import annotations

from dataclasses import dataclass


class McpServerError(Exception):
    """An MCP server failed to start, died, timed out or refused a call (the message says which)."""


@dataclass(frozen=True)
class Timeouts:
    """Bounds on waiting for a server."""

    start: float = 30.0
    """``initialize`` and the first ``tools/list``."""
    call: float = 120.0
    """One ``tools/call``."""
