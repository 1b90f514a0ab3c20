"""The editor tools reach a local ACP agent as tandem's own MCP server.

A real ACP agent process (mcp_agent.py, on the `acp` SDK) gets
``tandem-editor`` in ``session/new``'s ``mcpServers``, starts it with the
official ``mcp`` client, lists its tools and calls them; the server asks the
backend over its Unix socket. The editor behind it is a stand-in that answers
as Emacs's ``tandem--instrument`` would, with one path outside the root the
backend must drop (the real Emacs is in tests/elisp/tandem-instruments-tests.el).
The backchannel refuses a wrong token, an over-long first line and a peer
that says nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import sys
from pathlib import Path
from typing import Any

from acp_helpers import RecordingSink, chat

from tandem.editor import EditorError, NoEditor
from tandem.mcp.instruments import MAX_LINE, EditorChannels
from tandem.mcp.instruments_server import SERVER_NAME, TOKEN_ENV
from tandem.providers.acp import AcpProvider

AGENT = Path(__file__).with_name("mcp_agent.py")
NAMES = ["diagnostics", "definitions", "references", "outline", "open_buffers",
         "project_files"]


class StandInEmacs:
    """Answers ``open_buffers`` as Emacs would for ROOT plus one buffer outside it."""

    def __init__(self, root: Path, outside: Path) -> None:
        self.root, self.outside = root, outside
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def buffer_text(self, path: Path) -> str | None:
        return None

    async def write_buffer(self, path: Path, content: str) -> bool:
        return False

    async def instrument(self, name: str, params: dict[str, Any], timeout: float) -> Any:
        self.asked.append((name, params))
        if name != "open_buffers":
            raise EditorError(f"no {name} here")
        return {"buffers": [
            {"file": str(self.root / "a.py"), "modified": True, "mode": "python-mode"},
            {"file": str(self.outside), "modified": False, "mode": "text-mode"}]}


def _agent(tmp: Path, calls: list[dict[str, Any]]) -> tuple[list[str], Path]:
    script = tmp / "mcp-agent.json"
    script.write_text(json.dumps({"calls": calls}))
    log = tmp / "mcp-agent.jsonl"
    return [sys.executable, str(AGENT), str(script), str(log)], log


def _log(path: Path, method: str) -> list[Any]:
    lines = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    return [x["params"] for x in lines if x["method"] == method]


def _turn(tmp: Path, root: Path, editor: Any, calls: list[dict[str, Any]]
          ) -> tuple[Path, RecordingSink, list[Path]]:
    command, log = _agent(tmp, calls)
    channels = EditorChannels(editor)
    folders: list[Path] = []

    def entries(r: Path) -> list[Any]:
        got = channels.entries("sess", r)
        folders.extend(Path(e.args[-1]).parent for e in got)
        return got

    provider = AcpProvider("mcp", command, {}, editor_tools=entries)
    sink = RecordingSink()

    async def scenario() -> None:
        try:
            result = await provider.run(chat(root, "use the editor"), sink)
            assert result.outcome == "succeeded", result.error
            # Still open while the session lives: 0700 folder, 0600 socket.
            folder = folders[0]
            assert stat.S_IMODE(folder.stat().st_mode) == 0o700
            assert stat.S_IMODE((folder / "s").stat().st_mode) == 0o600
        finally:
            await provider.close()
            await channels.close_session("sess")

    asyncio.run(asyncio.wait_for(scenario(), 90))
    return log, sink, folders


def test_agent_lists_and_calls_the_editor_tools(tmp_path: Path, root: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x")
    (root / "a.py").write_text("x = 1\n")
    editor = StandInEmacs(Path(os.path.realpath(root)), outside)
    log, sink, folders = _turn(tmp_path, root, editor, [
        {"tool": "open_buffers", "arguments": {}},
        {"tool": "outline", "arguments": {"path": "../elsewhere.txt"}},
        {"tool": "diagnostics", "arguments": {"path": "a.py", "surprise": 1}}])
    new = _log(log, "session/new")[0]
    server = new["servers"][0]
    assert server["name"] == SERVER_NAME and server["command"] == sys.executable
    assert server["args"][:2] == ["-m", "tandem.mcp.instruments_server"]
    assert server["env"] == [TOKEN_ENV]  # the token travels in the environment, not argv
    listed = _log(log, "mcp-tools")[0]
    assert listed["tools"] == NAMES and all(listed["read_only"].values())
    calls = {c["tool"]: c for c in _log(log, "mcp-call")}
    buffers = calls["open_buffers"]
    assert not buffers["is_error"]
    assert "a.py (python-mode, modified (unsaved edits))" in buffers["text"]
    assert "elsewhere" not in buffers["text"]
    assert "[1 buffers outside the workspace root, not shown]" in buffers["text"]
    refused = calls["outline"]
    assert refused["is_error"] and "outside the workspace root" in refused["text"]
    bad = calls["diagnostics"]
    assert bad["is_error"] and "invalid arguments for diagnostics" in bad["text"]
    # Only open_buffers reached the editor: the refused calls never did.
    assert [name for name, _ in editor.asked] == ["open_buffers"]
    assert editor.asked[0][1]["root"] == os.path.realpath(root)
    assert "open_buffers -> Buffers visiting" in sink.streamed()
    assert not folders[0].exists()  # the session closed: socket and folder gone


def test_without_emacs_every_tool_says_it_needs_emacs(tmp_path: Path, root: Path) -> None:
    log, _sink, _ = _turn(tmp_path, root, NoEditor(), [
        {"tool": "project_files", "arguments": {}}])
    call = _log(log, "mcp-call")[0]
    assert call["is_error"] and "needs Emacs" in call["text"]


def test_the_backchannel_refuses_strangers(tmp_path: Path, root: Path) -> None:
    async def scenario() -> list[bytes]:
        channels = EditorChannels(NoEditor())
        entry = channels.entries("sess", root)[0]
        path = entry.args[-1]
        token = next(e.value for e in entry.env if e.name == TOKEN_ENV)
        got = []

        async def exchange(first: bytes, then: bytes = b"") -> bytes:
            reader, writer = await asyncio.open_unix_connection(path)
            writer.write(first + then)
            await writer.drain()
            writer.write_eof()  # no more requests: the backend closes after its replies
            data = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            return data

        got.append(await exchange(b'{"token": "wrong"}\n', b'{"id": 1, "op": "list"}\n'))
        got.append(await exchange(b"x" * (MAX_LINE + 10) + b"\n"))
        got.append(await exchange(b"not json\n"))
        listed = await exchange(json.dumps({"token": token}).encode() + b"\n",
                                b'{"id": 7, "op": "list"}\n[1]\n{"id": 8, "op": "call", '
                                b'"tool": "shell", "arguments": {"command": "id"}}\n')
        got.append(listed)
        # A peer that never sends its token is dropped after AUTH_TIMEOUT.
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        sock.settimeout(15)
        got.append(await asyncio.to_thread(sock.recv, 100))
        sock.close()
        await channels.aclose()
        return got

    wrong, long, garbage, listed, silent = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert wrong == long == garbage == silent == b""
    lines = [json.loads(x) for x in listed.splitlines()]
    assert lines[0] == {"ok": True}
    assert lines[1]["id"] == 7 and [t["name"] for t in lines[1]["tools"]] == NAMES
    assert lines[2] == {"ok": False, "error": "a request is a JSON object"}
    assert lines[3] == {"id": 8, "ok": False, "error": "unknown tool 'shell'"}
