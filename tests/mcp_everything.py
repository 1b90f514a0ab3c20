"""Install `@modelcontextprotocol/server-everything` from npm for the MCP tests.

The MCP project's reference server (every kind of tool, resource and prompt),
pinned to `VERSION` and cached like the ACP adapter (`tests/npm_cache.py`).
Command line (for ``make test``): installs when missing and prints the
executable; exit status 1 with the reason on stderr when npm or the registry
is unavailable.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # npm_cache, when run as a script
import npm_cache  # noqa: E402

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"
BIN = "mcp-server-everything"


def ensure_everything() -> Path:
    """The server's executable, installing it first when missing (`npm_cache.NpmUnavailable`)."""
    return npm_cache.ensure("mcp", f"server-everything-{VERSION}", PACKAGE, VERSION, BIN)


def main() -> int:
    """Install when missing; print the executable, or the reason it is unavailable."""
    try:
        print(ensure_everything())
    except npm_cache.NpmUnavailable as exc:
        print(f"MCP server-everything unavailable: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
