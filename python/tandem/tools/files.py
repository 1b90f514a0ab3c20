"""Read-capability tools: read a file, list or glob files (grep is in `tandem.tools.grep`).

Every path is confined to the root (`paths`), every walk too (`walk`); the
blocking work runs in a worker thread within the call's time budget
(`budget`); reads stream and stop at the limit (`fsread`).
"""

from __future__ import annotations

from pathlib import Path, PurePath

from pydantic import Field

from tandem.tools.base import Tool, ToolArgs, ToolContext, ToolError, cap_text
from tandem.tools.budget import Deadline, run_blocking
from tandem.tools.fsread import BINARY_SNIFF, is_binary, iter_lines, open_regular, read_upto
from tandem.tools.grep import GREP_TOOL
from tandem.tools.paths import display_path, resolve_in_root
from tandem.tools.walk import SKIP_DIRS, Skipped, walk

MAX_ENTRIES = 1000
MAX_LINE = 64 * 1024
"""Bytes of one line shown by read_file; the rest of a longer line is dropped."""

__all__ = ["MAX_ENTRIES", "READ_TOOLS", "SKIP_DIRS", "list_files", "read_file"]


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


def _read(root: Path, args: ReadArgs, cap: int, deadline: Deadline) -> str:
    real = resolve_in_root(root, args.path)
    shown = display_path(root, real)
    with open_regular(real, shown) as f:
        head = read_upto(f, BINARY_SNIFF)
        if is_binary(head):
            raise ToolError(f"{shown}: binary file, not shown")
        last = args.offset - 1 + args.limit
        out: list[str] = []
        size = 0
        n = 0
        for n, (raw, cut) in enumerate(iter_lines(f, MAX_LINE, head), 1):
            if n % 4096 == 0:
                deadline.check()
            if n < args.offset:
                continue
            line = raw.decode("utf-8", "replace")
            if cut:
                line += f" [line truncated: longer than {MAX_LINE} bytes]"
            out.append(f"{n:6}\t{line}")
            size += len(line) + 8
            if n >= last or size > cap:
                break
    if not out:
        return f"({shown}: {n} lines, none from line {args.offset})"
    return cap_text("\n".join(out), cap)


async def read_file(ctx: ToolContext, args: ReadArgs) -> str:
    """Lines OFFSET.. of a text file, each prefixed with its number."""
    return await run_blocking(
        ctx, "read_file", lambda d: _read(ctx.root, args, ctx.output_cap, d)
    )


def _finish(names: list[str], skipped: Skipped, cap: int) -> str:
    extra = len(names) - MAX_ENTRIES
    text = "\n".join(names[:MAX_ENTRIES]) or "(no entries)"
    if extra > 0:
        text += f"\n[{extra} more entries not shown]"
    note = skipped.note()
    if not note:
        return cap_text(text, cap)
    return cap_text(text, max(cap - len(note.encode()) - 1, 128)) + "\n" + note


def _list(root: Path, args: ListArgs, cap: int, deadline: Deadline) -> str:
    real = resolve_in_root(root, args.path)
    if not real.is_dir():
        raise ToolError(f"{args.path}: not a folder")
    real_root = resolve_in_root(root, ".")
    skipped = Skipped()
    prefix = display_path(root, real)
    prefix = "" if prefix == "." else prefix + "/"
    if not args.pattern:
        entries = walk(real_root, real, deadline, skipped, max_depth=1)
        names = [e.rel + ("/" if e.is_dir else "") for e in entries]
        return _finish(names, skipped, cap)
    pattern = args.pattern
    if ".." in PurePath(pattern).parts or PurePath(pattern).is_absolute():
        raise ToolError("pattern must stay inside the folder (no '..', not absolute)")
    depth = None if "**" in pattern else len(PurePath(pattern).parts)
    # Loaded here, with the first pattern: ~25 ms of every start otherwise.
    from wcmatch import glob as wcglob

    # ``**`` spans folders; ``*`` matches dot files too (as pathlib's glob does).
    flags = wcglob.GLOBSTAR | wcglob.DOTGLOB

    def want(rel: str) -> bool:
        return bool(wcglob.globmatch(rel, pattern, flags=flags))

    names = []
    # Skipped entries are all named, matching or not: a link out of the root
    # may be exactly what the pattern tried to reach (``link_dir/*``).
    found = walk(real_root, real, deadline, skipped, max_depth=depth, want=want,
                 name_skipped=lambda rel: True)
    for e in found:
        if e.is_dir and not want(e.rel):
            continue
        names.append(prefix + e.rel + ("/" if e.is_dir else ""))
        if len(names) > MAX_ENTRIES * 10:
            break  # enough to say "more not shown" without walking a huge tree
    return _finish(sorted(names), skipped, cap)


async def list_files(ctx: ToolContext, args: ListArgs) -> str:
    """Entries of a folder, or the files under it matching a glob."""
    return await run_blocking(
        ctx, "list_files", lambda d: _list(ctx.root, args, ctx.output_cap, d)
    )


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
    GREP_TOOL,
]
"""The read-capability tools."""
