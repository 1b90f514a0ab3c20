"""MCP tools in native turns: through the real backend, in a discussion, over HTTP.

The model is the fake OpenAI server (scripted tool calls); the MCP server is
the SDK-written test server (tests/fakes/mcp_server.py), over stdio and over
streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec
from mcp_helpers import FAKE, Sink, fake_server

from tandem.config.model import McpHttpServer, McpStdioServer, SettingsModel
from tandem.mcp.connection import McpConnection, Timeouts
from tandem.mcp.service import McpService

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "providers"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from epc_peer import Peer, start_backend  # noqa: E402
from native_helpers import make_provider, request  # noqa: E402

from tandem.protocol.sexp import Symbol  # noqa: E402

TOKEN = "mcp-token"


def _call(peer: Peer, method: str, params: object = None, timeout: float = 60.0) -> object:
    uid = peer.call(method, params)
    peer.sock.settimeout(timeout)
    while True:
        msg = peer.recv()
        if msg[0] == "call":  # an event batch: acknowledge it
            peer.send([Symbol("return"), msg[1], None])
        elif msg[1] == uid:
            assert msg[0] == "return", msg
            return msg[2]


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[tuple[Peer, FakeOpenAI, Path]]:
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "tandem" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"mcp_servers": {
        "t": {"command": sys.executable, "args": [str(FAKE)]}}}))
    script = [Reply(tool_calls=[ToolCallSpec(id="m1", name="mcp__t__echo",
                                             input={"text": "hello"})]),
              Reply(text="done")]
    with FakeOpenAI(script) as fake:
        proc = start_backend(tmp_path / "home", TOKEN, env={
            "OPENAI_BASE_URL": fake.base_url + "/v1", "OPENAI_API_KEY": "sk-m"})
        peer = Peer(proc.port)  # type: ignore[attr-defined]
        _call(peer, "hello", {"token": TOKEN})
        try:
            yield peer, fake, tmp_path
        finally:
            peer.close()
            proc.terminate()
            proc.wait(15)


def test_native_turn_calls_an_mcp_tool_through_the_backend(
        backend: tuple[Peer, FakeOpenAI, Path]) -> None:
    peer, fake, tmp = backend
    root = tmp / "project"
    root.mkdir()
    info = _call(peer, "sessions/new", {"cwd": str(root)})
    assert isinstance(info, dict)
    listed = _call(peer, "mcp/list", {"session": info["id"]})
    assert isinstance(listed, dict)
    assert listed["servers"][0]["status"] == "stopped"  # lazily: nothing started yet
    listed = _call(peer, "mcp/list", {"session": info["id"], "connect": True})
    assert isinstance(listed, dict)
    row = listed["servers"][0]
    print(f"\nMCP tool tokens per request for server t: {row['tokens']}")
    assert row["status"] == "running" and "echo" in row["tools"] and row["tokens"] > 100
    sent = _call(peer, "turns/send", {"session": info["id"], "text": "echo",
                                      "provider": "openai:m"})
    assert isinstance(sent, dict)
    status = _call(peer, "turns/wait", {"session": info["id"], "turn": sent["turn"],
                                        "timeout": 60})
    assert isinstance(status, dict) and status["outcome"] == "succeeded", status
    entries = [json.loads(x) for x in Path(info["path"]).read_text().splitlines()]
    call = next(e for e in entries if e["type"] == "tool_call")
    result = next(e for e in entries if e["type"] == "tool_result")
    assert call["name"] == "mcp__t__echo" and call["kind"] == "read"
    assert result["status"] == "completed" and "echo: hello" in json.dumps(result)
    first = fake.api_requests("/v1/chat/completions")[0].body
    names = [t["function"]["name"] for t in first["tools"]]
    assert "mcp__t__echo" in names and "read_file" in names
    _call(peer, "mcp/disable", {"session": info["id"], "name": "t"})
    listed = _call(peer, "mcp/list", {"session": info["id"]})
    assert isinstance(listed, dict)
    assert listed["servers"][0]["enabled"] is not True
    assert listed["servers"][0]["tokens"] == row["tokens"]  # still shown, from the last run
    log = _call(peer, "mcp/log", {"session": info["id"], "name": "t"})
    assert isinstance(log, dict)
    _call(peer, "sessions/close", {"session": info["id"]})


def _service(config: McpStdioServer | McpHttpServer) -> tuple[McpService, SettingsModel]:
    return McpService(timeouts=Timeouts(start=30, call=20)), SettingsModel(
        mcp_servers={"t": config})


@pytest.mark.anyio
async def test_a_discussion_refuses_a_writing_mcp_tool(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[ToolCallSpec(id="w1", name="mcp__t__write_note",
                                             input={"text": "x"})]),
              Reply(tool_calls=[ToolCallSpec(id="r1", name="mcp__t__echo",
                                             input={"text": "ok"})]),
              Reply(text="done")]
    service, settings = _service(fake_server())
    with FakeOpenAI(script) as fake:
        provider = make_provider("openai", fake)
        provider.tool_source = service.tool_source(lambda: settings)
        sink = Sink()
        result = await provider.run(request(tmp_path, read_only=True, model="m"), sink)
        await service.aclose()
    assert result.outcome == "succeeded", result
    assert ("w1", "mcp__t__write_note", "execute") in sink.calls
    status = {cid: (st, out) for cid, st, out in sink.results}
    assert status["w1"][0] == "refused" and "read-only (discussion)" in status["w1"][1]
    assert status["r1"] == ("completed", "echo: ok")
    assert not (tmp_path / "note.txt").exists() and not sink.asked


@pytest.mark.anyio
async def test_ask_mode_asks_before_a_writing_mcp_tool(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[ToolCallSpec(id="w1", name="mcp__t__write_note",
                                             input={"text": "from mcp"})]),
              Reply(text="done")]
    service, settings = _service(fake_server())
    with FakeOpenAI(script) as fake:
        provider = make_provider("openai", fake)
        provider.tool_source = service.tool_source(lambda: settings)
        sink = Sink("allow_once")
        result = await provider.run(request(tmp_path, permission_mode="auto-edit",
                                            model="m"), sink)
        await service.aclose()
    assert result.outcome == "succeeded", result
    assert [a.tool for a in sink.asked] == ["mcp__t__write_note"]
    assert (tmp_path / "note.txt").read_text() == "from mcp"  # the server runs in the root


@pytest.mark.anyio
async def test_a_server_that_cannot_start_fails_the_turn_by_name(tmp_path: Path) -> None:
    service, settings = _service(McpStdioServer(command="/nonexistent/server"))
    with FakeOpenAI([Reply(text="never")]) as fake:
        provider = make_provider("openai", fake)
        provider.tool_source = service.tool_source(lambda: settings)
        result = await provider.run(request(tmp_path, model="m"), Sink())
        await service.aclose()
        assert not fake.api_requests("/v1/chat/completions")
    assert result.outcome == "failed"
    assert result.error is not None and result.error.startswith("MCP server t could not start")
    assert "disabling the server" in result.error


@pytest.mark.anyio
async def test_an_http_server_over_streamable_http(tmp_path: Path, http_server: str) -> None:
    config = McpHttpServer(type="http", url=http_server, headers={"X-Test": "1"})
    conn = McpConnection("web", config, tmp_path, Timeouts(start=30, call=20))
    await conn.ensure_started()
    try:
        assert {t.name for t in conn.tools} >= {"echo", "write_note"}
        result = await conn.call("echo", {"text": "over http"})
        assert result.content[0].text == "echo: over http"  # type: ignore[union-attr]
    finally:
        await conn.stop()
