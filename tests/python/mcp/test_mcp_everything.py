"""The MCP client against the MCP project's own reference server from npm.

`@modelcontextprotocol/server-everything` over stdio (installed by
`tests/mcp_everything.py`, as `make test-deps` does): its tools get their
capability class from their annotations, its text, image and structured
results render, its environment holds no secret of the backend's, and its
tool definitions have a token figure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tandem.config.model import McpStdioServer
from tandem.mcp.adapter import render_result, token_estimate, tool_kind
from tandem.mcp.connection import McpConnection, Timeouts

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from mcp_everything import ensure_everything  # noqa: E402
from npm_cache import NpmUnavailable  # noqa: E402

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def everything() -> Path:
    try:
        return ensure_everything()
    except NpmUnavailable as exc:
        pytest.skip(f"@modelcontextprotocol/server-everything unavailable: {exc}")


async def test_the_reference_server_over_stdio(everything: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
    conn = McpConnection("everything", McpStdioServer(command=str(everything), args=["stdio"]),
                         tmp_path, Timeouts(start=60, call=30))
    await conn.ensure_started()
    try:
        kinds = {t.name: tool_kind(t) for t in conn.tools}
        assert kinds["echo"] == "read"  # readOnlyHint: true
        assert kinds["toggle-simulated-logging"] == "execute"  # readOnlyHint: false
        assert render_result(await conn.call("echo", {"message": "hi"})) == "Echo: hi"
        image = render_result(await conn.call("get-tiny-image", {}))
        assert "[image: image/png" in image and "not shown]" in image
        total = render_result(await conn.call("get-sum", {"a": 2, "b": 3}))
        assert "5" in total
        env = render_result(await conn.call("get-env", {}))
        assert "sk-ant-must-not-leak" not in env and "ANTHROPIC_API_KEY" not in json.dumps(env)
        assert token_estimate("everything", conn.tools) > 500
    finally:
        await conn.stop()
