"""The MCP client against a real server written with the SDK (tests/fakes/mcp_server.py).

Tools and their capability classes, results (text, structured content, an
image placeholder), a crash in the middle of a call, a server that cannot
start or never answers, the scrubbed environment, the reaper, the token figure.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from mcp_helpers import fake_server

from tandem import reaper
from tandem.config.model import McpStdioServer
from tandem.mcp.adapter import adapt, exposed_name, render_result, token_estimate, tool_kind
from tandem.mcp.connection import McpConnection, McpServerError, Timeouts
from tandem.tools.base import ToolContext, ToolError

pytestmark = pytest.mark.anyio


async def test_tools_results_and_capability_classes(tmp_path: Path) -> None:
    conn = McpConnection("t", fake_server(), tmp_path, Timeouts(start=30, call=20))
    await conn.ensure_started()
    try:
        kinds = {t.name: tool_kind(t) for t in conn.tools}
        assert kinds["echo"] == "read" and kinds["write_note"] == "execute"
        tools = {t.name: t for t in adapt(conn, set())}
        assert set(tools) >= {"mcp__t__echo", "mcp__t__write_note", "mcp__t__lookup"}
        assert tools["mcp__t__echo"].schema()["properties"]["text"]["type"] == "string"
        ctx = ToolContext(root=tmp_path)
        echo = tools["mcp__t__echo"]
        assert await echo.run(ctx, echo.args.model_validate({"text": "hi"})) == "echo: hi"
        picture = render_result(await conn.call("picture", {}))
        assert picture == "a picture:\n[image: image/png, 32 bytes, not shown]"
        lookup = json.loads(render_result(await conn.call("lookup", {"key": "abc"})))
        assert lookup["key"] == "abc" and lookup["length"] == 3
        bad = tools["mcp__t__echo"]
        with pytest.raises(ToolError, match="text"):  # the server's own validation error
            await bad.run(ctx, bad.args.model_validate({"wrong": 1}))
        assert token_estimate("t", conn.tools) > 100
    finally:
        await conn.stop()


async def test_server_env_is_scrubbed_and_its_group_is_reaped(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    conn = McpConnection("t", fake_server({"SECRET_TOKEN": "configured"}), tmp_path)
    await conn.ensure_started()
    try:
        assert conn._process is not None
        pid = conn._process.pid
        assert pid in reaper.tracker()._groups  # dies with the backend
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"OPENAI_API_KEY=sk-must-not-leak" not in environ
        assert f"{reaper.OWNER_VAR}={reaper.tracker().instance}".encode() in environ
        looked = json.loads(render_result(await conn.call("lookup", {"key": "k"})))
        assert looked["env_secret"] == "configured"
    finally:
        await conn.stop()
    assert not reaper.group_alive(pid)


async def test_a_crash_mid_call_is_a_named_error(tmp_path: Path) -> None:
    conn = McpConnection("crashy", fake_server(), tmp_path, Timeouts(start=30, call=30))
    await conn.ensure_started()
    started = time.monotonic()
    with pytest.raises(McpServerError) as err:
        await conn.call("crash", {})
    assert time.monotonic() - started < 10
    assert "MCP server crashy died during crash" in str(err.value)
    assert "exited (3)" in str(err.value) and "about to crash" in str(err.value)
    assert conn.status == "exited"
    await conn.ensure_started()  # the next turn starts it again
    assert conn.running
    await conn.stop()


async def test_a_call_that_never_answers_times_out(tmp_path: Path) -> None:
    conn = McpConnection("slowpoke", fake_server(), tmp_path, Timeouts(start=30, call=1))
    await conn.ensure_started()
    try:
        with pytest.raises(McpServerError, match="slowpoke: slow timed out after 1 s"):
            await conn.call("slow", {"seconds": 20})
    finally:
        await conn.stop()


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        (McpStdioServer(command="/nonexistent/mcp"), "could not start: No such file"),
        (McpStdioServer(command=sys.executable,
                        args=["-c", "import sys; print('bad config', file=sys.stderr); "
                              "sys.exit(2)"]),
         "exited (2); stderr:\nbad config"),
        (McpStdioServer(command="sleep", args=["60"]), "did not start within 1 s"),
    ],
)
async def test_a_server_that_cannot_start_is_a_named_error(tmp_path: Path,
                                                           config: McpStdioServer,
                                                           needle: str) -> None:
    conn = McpConnection("broken", config, tmp_path, Timeouts(start=1))
    started = time.monotonic()
    with pytest.raises(McpServerError) as err:
        await conn.ensure_started()
    assert time.monotonic() - started < 8
    assert str(err.value).startswith("MCP server broken ") and needle in str(err.value)
    assert conn.status == "failed" and any("failed" in line for line in conn.log_lines())


def test_exposed_names_are_api_safe() -> None:
    assert exposed_name("my.docs", "find page") == "mcp__my_docs__find_page"
    assert len(exposed_name("s" * 60, "t" * 60)) == 64
    assert os.sep not in exposed_name("a/b", "c")
