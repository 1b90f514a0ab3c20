"""Native tools on real files and real processes: paths, edits, shell, permissions."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from tandem.tools.base import ToolContext, ToolError
from tandem.tools.edit import EditArgs, WriteArgs, edit_file, write_file
from tandem.tools.files import ListArgs, ReadArgs, list_files, read_file
from tandem.tools.grep import GrepArgs, grep
from tandem.tools.paths import resolve_in_root
from tandem.tools.permissions import SessionGrants, decide
from tandem.tools.shell import ShellArgs, shell

pytestmark = pytest.mark.anyio


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(root=workspace, shell_timeout=5.0, output_cap=1000)


@pytest.mark.parametrize(
    "path", ["../outside.txt", "sub/../../outside.txt", "/etc/passwd", "~/x", "", "a\x00b"]
)
def test_paths_outside_or_invalid_are_refused(workspace: Path, path: str) -> None:
    (workspace.parent / "outside.txt").write_text("secret")
    with pytest.raises(ToolError):
        resolve_in_root(workspace, path)


def test_paths_inside_resolve(workspace: Path) -> None:
    real = Path(os.path.realpath(workspace))
    assert resolve_in_root(workspace, "a.txt") == real / "a.txt"
    assert resolve_in_root(workspace, "sub/../a.txt") == real / "a.txt"
    assert resolve_in_root(workspace, str(workspace / "new" / "f.txt")) == real / "new" / "f.txt"
    assert resolve_in_root(workspace, ".") == real


async def test_symlink_escapes_are_refused(workspace: Path, ctx: ToolContext) -> None:
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "linkdir").symlink_to(outside)
    for path in ["link.txt", "linkdir/secret.txt", "linkdir/new.txt"]:
        with pytest.raises(ToolError, match="outside the workspace root"):
            await read_file(ctx, ReadArgs(path=path))
    with pytest.raises(ToolError, match="outside"):
        await write_file(ctx, WriteArgs(path="linkdir/new.txt", content="x"))
    with pytest.raises(ToolError, match="outside"):
        await edit_file(ctx, EditArgs(path="link.txt", old_text="secret", new_text="x"))
    assert (outside / "secret.txt").read_text() == "secret"
    assert not (outside / "new.txt").exists()
    # A link that stays inside is fine.
    (workspace / "inside.txt").symlink_to(workspace / "a.txt")
    assert "hello world" in await read_file(ctx, ReadArgs(path="inside.txt"))


async def test_read_file_numbers_lines_and_pages(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "m.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = await read_file(ctx, ReadArgs(path="m.txt", offset=3, limit=2))
    assert out == "     3\tline 3\n     4\tline 4"
    (workspace / "bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ToolError, match="binary"):
        await read_file(ctx, ReadArgs(path="bin"))
    with pytest.raises(ToolError, match="no such file"):
        await read_file(ctx, ReadArgs(path="missing.txt"))


async def test_list_and_glob(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "pkg" / "m.py").write_text("x = 1\n")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text("ref")
    assert (await list_files(ctx, ListArgs())).splitlines() == ["a.txt", "src/"]
    assert await list_files(ctx, ListArgs(pattern="**/*.py")) == "src/pkg/m.py"
    with pytest.raises(ToolError, match="inside"):
        await list_files(ctx, ListArgs(pattern="../*"))


async def test_grep(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "b.py").write_text("def f():\n    return 'World'\n")
    out = await grep(ctx, GrepArgs(pattern="world", ignore_case=True))
    assert out.splitlines() == ["a.txt:1: hello world", "b.py:2:     return 'World'"]
    assert await grep(ctx, GrepArgs(pattern="world", glob="*.py")) == "(no matches)"
    with pytest.raises(ToolError, match="bad regular expression"):
        await grep(ctx, GrepArgs(pattern="("))


async def test_edit_is_exact_and_unique(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "e.txt").write_text("a b a\n")
    with pytest.raises(ToolError, match="occurs 2 times"):
        await edit_file(ctx, EditArgs(path="e.txt", old_text="a", new_text="c"))
    assert (workspace / "e.txt").read_text() == "a b a\n"
    out = await edit_file(ctx, EditArgs(path="e.txt", old_text="a", new_text="c", replace_all=True))
    assert out == "Edited e.txt: 2 replacements."
    assert (workspace / "e.txt").read_text() == "c b c\n"
    with pytest.raises(ToolError, match="write_file"):
        await edit_file(ctx, EditArgs(path="nope.txt", old_text="a", new_text="b"))


async def test_write_creates_folders_and_keeps_mode(ctx: ToolContext, workspace: Path) -> None:
    assert await write_file(ctx, WriteArgs(path="d/e/f.txt", content="hé")) == (
        "Created d/e/f.txt (3 bytes)."
    )
    assert (workspace / "d" / "e" / "f.txt").read_text() == "hé"
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    await write_file(ctx, WriteArgs(path="run.sh", content="#!/bin/sh\necho hi\n"))
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert [p.name for p in workspace.iterdir() if "tandem" in p.name] == []  # no temp left
    with pytest.raises(ToolError, match="is a folder"):
        await write_file(ctx, WriteArgs(path="d", content="x"))


async def test_shell_runs_in_root_with_exit_code(ctx: ToolContext, workspace: Path) -> None:
    out = await shell(ctx, ShellArgs(command="pwd; echo err >&2"))
    assert out == f"{os.path.realpath(workspace)}\nerr\n[exit code 0]"
    with pytest.raises(ToolError, match=r"\[exit code 3\]"):
        await shell(ctx, ShellArgs(command="echo failing; exit 3"))
    assert ctx.ran_shell == ["pwd; echo err >&2", "echo failing; exit 3"]


async def test_shell_timeout_kills_the_process_group(ctx: ToolContext, workspace: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"killed after 0.5 s timeout"):
        await shell(
            ctx, ShellArgs(command="echo start; (sleep 30; touch late.txt) & sleep 30", timeout=0.5)
        )
    assert time.monotonic() - started < 3
    time.sleep(0.2)
    assert not (workspace / "late.txt").exists()


async def test_shell_timeout_is_capped_by_the_context(workspace: Path) -> None:
    ctx = ToolContext(root=workspace, shell_timeout=0.3)
    with pytest.raises(ToolError, match="0.3 s timeout"):
        await shell(ctx, ShellArgs(command="sleep 10", timeout=1000))


async def test_shell_output_is_capped(ctx: ToolContext) -> None:
    out = await shell(ctx, ShellArgs(command="yes x | head -c 100000"))
    assert out.startswith("x\nx\n")
    assert "[output truncated: 99000 more bytes not shown]" in out
    assert len(out) < 1200


@pytest.mark.parametrize(
    ("kind", "mode", "read_only", "granted", "expected"),
    [
        ("read", "read-only", True, False, "allow"),
        ("edit", "ask", False, False, "ask"),
        ("execute", "ask", False, False, "ask"),
        ("edit", "auto-edit", False, False, "allow"),
        ("execute", "auto-edit", False, False, "ask"),
        ("edit", "read-only", False, True, "refuse"),
        ("execute", "ask", True, True, "refuse"),
        ("edit", "ask", False, True, "allow"),
        ("other", "ask", False, False, "ask"),
    ],
)
def test_permission_table(
    kind: str, mode: str, read_only: bool, granted: bool, expected: str
) -> None:
    assert decide(kind, mode, read_only, granted) == expected  # type: ignore[arg-type]


def test_unknown_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown permission mode"):
        decide("edit", "yolo", False, False)  # type: ignore[arg-type]


def test_grants_are_per_session_and_tool() -> None:
    grants = SessionGrants()
    grants.grant("s1", "shell")
    assert grants.granted("s1", "shell")
    assert not grants.granted("s1", "write_file") and not grants.granted("s2", "shell")
    grants.forget_session("s1")
    assert not grants.granted("s1", "shell")
