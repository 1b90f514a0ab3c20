"""The editor tools' Python side: confinement, caps, shapes, and no Emacs.

The editor here is a stand-in that records what it is asked and answers
what Emacs could answer (many items, paths outside the root, odd shapes):
the test is of what the backend does with that. Real Emacs answers are in
tests/elisp/tandem-instruments-tests.el. ``tandem ask`` runs as the real
command against the fake OpenAI server, whose model calls ``diagnostics``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, Script, ToolCallSpec

from tandem.editor import NoEditor
from tandem.tools.base import ToolContext, ToolError
from tandem.tools.executor import default_tools
from tandem.tools.instruments import EDITOR_TOOLS, MAX_ITEMS, MAX_TEXT

TOOLS = {t.name: t for t in EDITOR_TOOLS}


class StandIn:
    """Records every question; answers with ANSWER (a value or a function of the params)."""

    def __init__(self, answer: Any = None) -> None:
        self.answer = answer
        self.asked: list[tuple[str, dict[str, Any], float]] = []

    async def buffer_text(self, path: Path) -> str | None:
        return None

    async def write_buffer(self, path: Path, content: str) -> bool:
        return False

    async def instrument(self, name: str, params: dict[str, Any], timeout: float) -> Any:
        self.asked.append((name, params, timeout))
        return self.answer(params) if callable(self.answer) else self.answer


def call(root: Path, editor: Any, name: str, output_cap: int = 64 * 1024,
         **args: Any) -> str:
    tool = TOOLS[name]
    ctx = ToolContext(root=root, editor=editor, output_cap=output_cap)
    return asyncio.run(tool.run(ctx, tool.args.model_validate(args)))


def test_every_editor_tool_is_read_class_and_native() -> None:
    assert [t.name for t in EDITOR_TOOLS] == [
        "diagnostics", "definitions", "references", "outline", "open_buffers",
        "project_files"]
    assert {t.kind for t in EDITOR_TOOLS} == {"read"}
    names = [t.name for t in default_tools()]
    assert all(t.name in names for t in EDITOR_TOOLS)


@pytest.mark.parametrize("name,args", [
    ("outline", {"path": "../outside/secret"}),
    ("outline", {"path": "link/secret"}),
    ("diagnostics", {"path": "/etc/passwd"}),
    ("definitions", {"path": "link/secret", "symbol": "x"}),
    ("references", {"path": "../outside/secret", "symbol": "x", "line": 1}),
])
def test_paths_outside_the_root_are_refused_before_emacs_is_asked(
        root: Path, name: str, args: dict[str, Any]) -> None:
    (root / "link").symlink_to(root.parent / "outside")
    editor = StandIn({"items": []})
    with pytest.raises(ToolError, match="outside the workspace root"):
        call(root, editor, name, **args)
    assert editor.asked == []


def test_paths_emacs_answers_outside_the_root_are_counted_not_shown(root: Path) -> None:
    real = Path(os.path.realpath(root))
    (root / "sub").mkdir()
    (root / "escape").symlink_to(root.parent / "outside")
    files = [str(real / "a.txt"), str(real / "sub"), "/etc/passwd",
             str(real / "escape" / "secret"), 42, "bad\x00name"]
    editor = StandIn({"project": "vc project at ~/p", "files": files, "total": 6})
    out = call(root, editor, "project_files")
    assert "a.txt" in out and "sub" in out
    assert "passwd" not in out and "secret" not in out
    assert "[4 files outside the workspace root, not shown]" in out
    name, params, timeout = editor.asked[0]
    assert (name, params["root"], params["limit"]) == ("project_files", str(real), 1000)
    assert timeout == params["budget"] <= 10


def test_caps_on_items_text_and_output(root: Path) -> None:
    real = Path(os.path.realpath(root))
    (root / "a.txt").write_text("x\n")
    many = [{"line": i, "col": 0, "severity": "error", "message": "m" * 5000,
             "source": "flymake: b"} for i in range(1, 2001)]
    editor = StandIn({"buffers": [{"file": str(real / "a.txt"), "modified": True,
                                   "checkers": ["flymake (b)"], "items": many}]})
    out = call(root, editor, "diagnostics", path="a.txt", output_cap=10 ** 7)
    lines = out.splitlines()
    assert lines[0] == "a.txt (unsaved edits): 2000 diagnostics (flymake (b))"
    assert len([x for x in lines if x.startswith("  a.txt:")]) == MAX_ITEMS
    assert f"[diagnostics past the first {MAX_ITEMS} not shown]" in out
    assert "m" * MAX_TEXT + "…" in out and "m" * (MAX_TEXT + 1) not in out
    small = call(root, editor, "diagnostics", path="a.txt", output_cap=2000)
    assert len(small.encode()) < 2200 and "[output truncated:" in small


def test_a_file_not_visited_says_so(root: Path) -> None:
    out = call(root, StandIn({"buffers": None}), "diagnostics", path="a.txt")
    assert out.startswith("a.txt: no Emacs buffer visits this file")


def test_odd_answers_fail_the_call_cleanly(root: Path) -> None:
    (root / "a.txt").write_text("x\n")
    with pytest.raises(ToolError, match="outline: Emacs gave no answer"):
        call(root, StandIn("a string"), "outline", path="a.txt")
    out = call(root, StandIn({"items": [1, "x", {"name": None, "line": "7"}]}),
               "outline", path="a.txt")
    assert "line 0" in out  # a non-integer line is no line, not a crash


def test_without_an_editor_every_tool_needs_emacs(root: Path) -> None:
    (root / "a.txt").write_text("x\n")
    for name, args in [("diagnostics", {}), ("definitions", {"path": "a.txt", "symbol": "f"}),
                       ("references", {"path": "a.txt", "symbol": "f"}),
                       ("outline", {"path": "a.txt"}), ("open_buffers", {}),
                       ("project_files", {})]:
        for editor in (None, NoEditor()):
            with pytest.raises(ToolError, match=f"^{name}: needs Emacs"):
                call(root, editor, name, **args)


def test_tandem_ask_answers_that_the_tool_needs_emacs(root: Path) -> None:
    script = Script([
        Reply(text="Checking.", tool_calls=[ToolCallSpec(name="diagnostics", input={})]),
        Reply(text="No editor here.")])
    with FakeOpenAI(script) as fake:
        env = {**os.environ, "OPENAI_BASE_URL": fake.base_url + "/v1",
               "OPENAI_API_KEY": "sk-test-not-real"}
        proc = subprocess.run(
            [sys.executable, "-m", "tandem.cli", "ask", "--cwd", str(root),
             "--provider", "openai:m", "what does the editor say?"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, env=env)
        bodies = [r.body for r in fake.api_requests("/v1/chat/completions")]
    assert proc.returncode == 0, proc.stderr
    assert "No editor here." in proc.stdout
    tools = {t["function"]["name"] for t in bodies[0]["tools"]}
    assert "diagnostics" in tools
    results = [m["content"] for m in bodies[1]["messages"] if m.get("role") == "tool"]
    assert len(results) == 1 and "diagnostics: needs Emacs" in json.dumps(results)


def test_xref_locations_are_capped_and_name_the_backend(root: Path) -> None:
    real = Path(os.path.realpath(root))
    (root / "a.py").write_text("f()\n")
    items = [{"file": str(real / "a.py"), "line": i, "col": 0, "summary": "f()"}
             for i in range(1, MAX_ITEMS + 2)]
    editor = StandIn({"backend": "eglot", "visited": True, "items": items})
    out = call(root, editor, "references", path="a.py", symbol="f", line=1)
    assert out.startswith("References of f (xref backend: eglot; a.py visited in Emacs):")
    assert len([x for x in out.splitlines() if x.startswith("a.py:")]) == MAX_ITEMS
    assert out.endswith(f"[locations past the first {MAX_ITEMS} not shown]")
    name, params, _ = editor.asked[0]
    assert (name, params["kind"], params["symbol"], params["line"]) == (
        "xref", "references", "f", 1)
    assert params["path"] == str(real / "a.py")
