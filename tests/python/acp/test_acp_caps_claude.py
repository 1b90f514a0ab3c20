"""Integration: the client capabilities (``fs/*``, ``terminal/*``) with the real
Claude Code ACP adapter against the fake Anthropic server.

The adapter release that routes its tools through the client
(`acp_adapter.CAPS_ADAPTER_VERSION`, tools ``mcp__acp__Read``/``Write``/``Bash``)
is driven here; each test skips, with the reason printed, when it cannot be
installed. The editor is `Buffers`, an in-memory editor holding unsaved text
(the ERT test drives the same path through real Emacs).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_adapter import CAPS_ADAPTER_VERSION, AdapterUnavailable, ensure_adapter
from acp_helpers import RecordingSink, chat
from claude_helpers import Claude
from fakes.script import Match, Reply, Script, Step, ToolCallSpec


@pytest.fixture(scope="module")
def caps_adapter() -> Path:
    try:
        return ensure_adapter(CAPS_ADAPTER_VERSION)
    except AdapterUnavailable as exc:
        print(f"\nskipping ACP capability tests: {exc}", file=sys.stderr)
        pytest.skip(f"Claude Code ACP adapter {CAPS_ADAPTER_VERSION} unavailable: {exc}")


class Buffers:
    """An editor whose buffers are a dict: path → text (modified or not)."""

    def __init__(self) -> None:
        self.texts: dict[Path, str] = {}
        self.saved: list[Path] = []

    async def buffer_text(self, path: Path) -> str | None:
        return self.texts.get(path)

    async def write_buffer(self, path: Path, content: str) -> bool:
        if path not in self.texts:
            return False
        self.texts[path] = content
        path.write_text(content)
        self.saved.append(path)
        return True


@pytest.fixture
def claude(caps_adapter: Path, tmp_path: Path) -> Iterator[Any]:
    made: list[Claude] = []

    def make(script: Script) -> Claude:
        c = Claude(caps_adapter, tmp_path, script)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def _tool(name: str, ask: str, **tool_input: Any) -> Script:
    return Script(
        [
            Step(
                match=Match(has_tools=True, last_user_contains=ask),
                reply=Reply(text="On it.", tool_calls=[ToolCallSpec(name=name, input=tool_input)]),
            ),
            Step(match=Match(has_tools=True), reply=Reply(text="Done.")),
        ],
        default=Reply(text="OK"),
    )


def _tool_results(c: Claude) -> str:
    """What the model was told the tools returned (the last agent request)."""
    return json.dumps(c.agent_bodies()[-1]["messages"])


def _incoming(c: Claude, method: str) -> list[dict[str, Any]]:
    return [m for d, m in c.wire if d == "incoming" and m.get("method") == method]


def test_read_answers_from_the_unsaved_buffer_not_the_disk(claude: Any, tmp_path: Path) -> None:
    target = tmp_path / "project" / "notes.txt"
    c: Claude = claude(_tool("mcp__acp__Read", "read notes", file_path=str(target)))
    target.write_text("what the disk says\n")
    editor = Buffers()
    editor.texts[target.resolve()] = "UNSAVED-EDIT in the buffer\n"

    async def scenario() -> Any:
        provider = c.provider(editor=editor)
        try:
            return await c.turn(provider, chat(c.root, "please read notes"), RecordingSink())
        finally:
            await provider.close()

    result = asyncio.run(scenario())
    assert result.outcome == "succeeded", result.error
    (read,) = _incoming(c, "fs/read_text_file")
    assert read["params"]["path"] == str(target)
    told = _tool_results(c)
    assert "UNSAVED-EDIT in the buffer" in told and "what the disk says" not in told
    assert c.leftovers() == []


def test_read_outside_the_root_is_refused(claude: Any, tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("SECRET-OUTSIDE\n")
    c: Claude = claude(_tool("mcp__acp__Read", "read it", file_path=str(secret)))

    async def scenario() -> Any:
        provider = c.provider()
        try:
            return await c.turn(provider, chat(c.root, "please read it"), RecordingSink())
        finally:
            await provider.close()

    result = asyncio.run(scenario())
    assert result.outcome == "succeeded", result.error
    told = _tool_results(c)
    assert "outside the workspace root" in told and "SECRET-OUTSIDE" not in told


@pytest.mark.parametrize("visited", [True, False], ids=["buffer", "disk"])
def test_write_goes_through_the_visiting_buffer_else_the_disk(
    claude: Any, tmp_path: Path, visited: bool
) -> None:
    target = tmp_path / "project" / "out.txt"
    c: Claude = claude(_tool("mcp__acp__Write", "write out", file_path=str(target),
                             content="NEW CONTENT\n"))
    target.write_text("old\n")
    editor = Buffers()
    if visited:
        editor.texts[target.resolve()] = "old, edited\n"

    async def scenario() -> Any:
        provider = c.provider(editor=editor)
        sink = RecordingSink("allow_once")
        try:
            return await c.turn(provider, chat(c.root, "please write out"), sink), sink
        finally:
            await provider.close()

    result, sink = asyncio.run(scenario())
    assert result.outcome == "succeeded", result.error
    assert len(_incoming(c, "fs/write_text_file")) == 1
    assert [a.tool for a in sink.asked] == ["mcp__acp__Write"]
    assert target.read_text() == "NEW CONTENT\n"
    assert editor.saved == ([target.resolve()] if visited else [])
    if visited:
        assert editor.texts[target.resolve()] == "NEW CONTENT\n"


LOUD = "i=0; while [ $i -lt 3000 ]; do echo line-$i-xxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done"


def test_terminal_runs_in_the_root_capped_and_leaves_nothing(claude: Any) -> None:
    c: Claude = claude(_tool("mcp__acp__Bash", "run it", command=f"pwd; {LOUD}; echo END-MARK",
                             timeout=30000, description="print a lot"))

    async def scenario() -> Any:
        provider = c.provider()
        sink = RecordingSink("allow_once")
        try:
            return await c.turn(provider, chat(c.root, "please run it"), sink), sink
        finally:
            await provider.close()

    result, sink = asyncio.run(scenario())
    assert result.outcome == "succeeded", result.error
    (created,) = _incoming(c, "terminal/create")
    # The adapter asks for 32000 bytes at most: the oldest output is dropped.
    assert created["params"]["outputByteLimit"] == 32000
    assert _incoming(c, "terminal/release")
    told = _tool_results(c)
    assert "END-MARK" in told and "line-2999-" in told and "line-0-" not in told
    assert str(c.root) not in told  # pwd's line was the oldest: dropped
    assert [a.tool for a in sink.asked] == ["mcp__acp__Bash"]
    (row,) = [r for r in sink.of("tool_result") if r[1] == sink.asked[0].call_id]
    # The row shows what the adapter reported: the capped output, its end kept.
    assert "END-MARK" in row[3] and "truncated" in row[3] and "line-0-" not in row[3]
    assert result.ran_shell
    assert c.leftovers() == []


def test_read_only_turn_refuses_writes_and_terminals(claude: Any, tmp_path: Path) -> None:
    target = tmp_path / "project" / "keep.txt"
    script = Script(
        [
            Step(match=Match(has_tools=True, last_user_contains="try"), reply=Reply(
                tool_calls=[
                    ToolCallSpec(name="mcp__acp__Write",
                                 input={"file_path": str(target), "content": "changed\n"}),
                    ToolCallSpec(name="mcp__acp__Bash",
                                 input={"command": "touch made-by-bash", "timeout": 5000}),
                ])),
            Step(match=Match(has_tools=True), reply=Reply(text="Could not.")),
        ],
        default=Reply(text="OK"),
    )
    c: Claude = claude(script)
    target.write_text("keep\n")

    async def scenario() -> Any:
        provider = c.provider()
        try:
            return await c.turn(provider, chat(c.root, "try", read_only=True), RecordingSink())
        finally:
            await provider.close()

    result = asyncio.run(scenario())
    assert result.outcome == "succeeded", result.error
    assert target.read_text() == "keep\n"
    assert not (c.root / "made-by-bash").exists()
    assert _incoming(c, "fs/write_text_file") == [] and _incoming(c, "terminal/create") == []
