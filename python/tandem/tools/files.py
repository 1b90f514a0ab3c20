"""Read-capability tools: read a file, list or glob files, grep."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import Field

from tandem.tools.base import Tool, ToolArgs, ToolContext, ToolError, cap_text
from tandem.tools.paths import display_path, resolve_in_root

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv"})
"""Folders that listing and grep do not descend into (noise, or huge)."""
MAX_ENTRIES = 1000
MAX_MATCHES = 500
MAX_GREP_FILE = 2 * 1024 * 1024


class ReadArgs(ToolArgs):
    """Arguments of ``read_file``."""

    path: str = Field(description="File path, relative to the workspace root")
    offset: int = Field(default=1, ge=1, description="First line to return (1-based)")
    limit: int = Field(default=2000, ge=1, le=20000, description="How many lines at most")


class ListArgs(ToolArgs):
    """Arguments of ``list_files``."""

    path: str = Field(default=".", description="Folder, relative to the workspace root")
    pattern: str | None = Field(
        default=None, description="Glob such as '**/*.py'; without it, list the folder itself"
    )


class GrepArgs(ToolArgs):
    """Arguments of ``grep``."""

    pattern: str = Field(description="Python regular expression")
    path: str = Field(default=".", description="File or folder to search")
    glob: str | None = Field(default=None, description="Only files whose name matches")
    ignore_case: bool = False


def _read_text(path: Path) -> str:
    if not path.exists():
        raise ToolError(f"{path.name}: no such file")
    if not path.is_file():
        raise ToolError(f"{path.name}: not a regular file")
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise ToolError(f"{path.name}: binary file, not shown")
    return data.decode("utf-8", "replace")


async def read_file(ctx: ToolContext, args: ReadArgs) -> str:
    """Lines OFFSET.. of a text file, each prefixed with its number."""
    real = resolve_in_root(ctx.root, args.path)
    lines = _read_text(real).splitlines()
    chosen = lines[args.offset - 1 : args.offset - 1 + args.limit]
    if not chosen:
        return f"({display_path(ctx.root, real)}: {len(lines)} lines, none from line {args.offset})"
    body = "\n".join(f"{args.offset + i:6}\t{line}" for i, line in enumerate(chosen))
    return cap_text(body, ctx.output_cap)


def _walk(top: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        out.extend(Path(dirpath) / f for f in sorted(filenames))
    return out


async def list_files(ctx: ToolContext, args: ListArgs) -> str:
    """Entries of a folder, or the files under it matching a glob."""
    real = resolve_in_root(ctx.root, args.path)
    if not real.is_dir():
        raise ToolError(f"{args.path}: not a folder")
    if args.pattern:
        if ".." in Path(args.pattern).parts or Path(args.pattern).is_absolute():
            raise ToolError("pattern must stay inside the folder (no '..', not absolute)")
        found = [
            p
            for p in sorted(real.glob(args.pattern))
            if not SKIP_DIRS.intersection(p.relative_to(real).parts)
        ]
        names = [display_path(ctx.root, p) + ("/" if p.is_dir() else "") for p in found]
    else:
        names = [
            p.name + ("/" if p.is_dir() else "")
            for p in sorted(real.iterdir())
            if p.name not in SKIP_DIRS
        ]
    extra = len(names) - MAX_ENTRIES
    text = "\n".join(names[:MAX_ENTRIES]) or "(no entries)"
    if extra > 0:
        text += f"\n[{extra} more entries not shown]"
    return cap_text(text, ctx.output_cap)


async def grep(ctx: ToolContext, args: GrepArgs) -> str:
    """Lines matching a regular expression, as ``path:line: text``."""
    try:
        rx = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"bad regular expression: {exc}") from exc
    real = resolve_in_root(ctx.root, args.path)
    files = [real] if real.is_file() else _walk(real) if real.is_dir() else []
    if not files:
        raise ToolError(f"{args.path}: no such file or folder")
    hits: list[str] = []
    for f in files:
        if args.glob and not f.match(args.glob):
            continue
        try:
            if f.stat().st_size > MAX_GREP_FILE:
                continue
            data = f.read_bytes()
        except OSError:
            continue
        if b"\x00" in data[:8192]:
            continue
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if rx.search(line):
                hits.append(f"{display_path(ctx.root, f)}:{n}: {line}")
                if len(hits) >= MAX_MATCHES:
                    hits.append(f"[stopped after {MAX_MATCHES} matches]")
                    return cap_text("\n".join(hits), ctx.output_cap)
    return cap_text("\n".join(hits) or "(no matches)", ctx.output_cap)


READ_TOOLS = [
    Tool(
        "read_file",
        "read",
        "Read a text file of the workspace; lines come numbered.",
        ReadArgs,
        read_file,
        lambda a: f"Read {a.path}",
    ),
    Tool(
        "list_files",
        "read",
        "List a folder of the workspace, or the files matching a glob pattern under it.",
        ListArgs,
        list_files,
        lambda a: f"List {a.path}" + (f" {a.pattern}" if a.pattern else ""),
    ),
    Tool(
        "grep",
        "read",
        "Search files of the workspace for a regular expression.",
        GrepArgs,
        grep,
        lambda a: f"Grep {a.pattern!r} in {a.path}",
    ),
]
"""The read-capability tools."""
