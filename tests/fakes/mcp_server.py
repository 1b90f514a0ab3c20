"""A real MCP server for the tests, written with the SDK's own server API (FastMCP).

``python mcp_server.py`` serves over stdio; ``python mcp_server.py --http PORT``
serves streamable HTTP on 127.0.0.1:PORT at ``/mcp``. Its tools cover what
tandem must handle: read-only and writing tools, structured content, an
image, a slow call and a crash in the middle of a call.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time
from pathlib import Path

from mcp.server.fastmcp import FastMCP
from mcp.types import ImageContent, TextContent, ToolAnnotations

READ = ToolAnnotations(readOnlyHint=True)
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 24).decode()


def build(port: int = 8000) -> FastMCP:
    """The server with its tools."""
    server = FastMCP("tandem-test", host="127.0.0.1", port=port, log_level="WARNING")

    @server.tool(annotations=READ)
    def echo(text: str) -> str:
        """Return TEXT unchanged."""
        return f"echo: {text}"

    @server.tool(annotations=READ, structured_output=True)
    def lookup(key: str) -> dict[str, object]:
        """A structured answer for KEY."""
        return {"key": key, "length": len(key), "env_secret": os.environ.get("SECRET_TOKEN")}

    @server.tool(annotations=READ)
    def picture() -> list[TextContent | ImageContent]:
        """A caption and a small PNG."""
        return [TextContent(type="text", text="a picture:"),
                ImageContent(type="image", data=PNG, mimeType="image/png")]

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
    def write_note(text: str) -> str:
        """Write TEXT to note.txt in the working directory."""
        Path("note.txt").write_text(text)
        return "written"

    @server.tool(annotations=READ)
    def crash() -> str:
        """Die in the middle of the call."""
        print("about to crash", file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool(annotations=READ)
    def huge(megabytes: int) -> str:
        """A text of MEGABYTES MiB (a result far past any sane limit)."""
        return "x" * (megabytes << 20)

    @server.tool(annotations=READ)
    def slow(seconds: float) -> str:
        """Sleep SECONDS, then answer."""
        time.sleep(seconds)
        return "slept"

    return server


def main() -> None:
    """Serve over stdio, or over streamable HTTP with ``--http PORT``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    args = parser.parse_args()
    if args.http is not None:
        build(args.http).run(transport="streamable-http")
    else:
        build().run()


if __name__ == "__main__":
    main()
