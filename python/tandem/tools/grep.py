"""The ``grep`` tool: a linear-time regular expression over confined, bounded files.

Patterns are RE2 (`google-re2`): matching time is linear in the text
whatever the pattern, so ``^(a+)+$`` cannot backtrack for ever. Files come
from the confined walk (`walk`), are opened only when regular (`fsread`),
and are read up to a per-file and a per-call byte cap; the search stops at
`MAX_MATCHES` and at the call's time budget, in a worker thread.
"""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import Protocol

from pydantic import Field

from tandem.tools.base import Tool, ToolArgs, ToolContext, ToolError, cap_text
from tandem.tools.budget import Deadline, run_blocking
from tandem.tools.fsread import is_binary, not_regular, open_regular, read_upto, special_kind
from tandem.tools.paths import display_path, resolve_in_root
from tandem.tools.walk import Entry, Skipped, walk

MAX_MATCHES = 500
MAX_GREP_FILE = 2 * 1024 * 1024
"""Bytes of one file searched; a larger file is skipped and named."""
MAX_GREP_TOTAL = 64 * 1024 * 1024
"""Bytes searched by one call; the search stops there and says so."""
MAX_SHOWN_LINE = 2000
"""Characters of a matching line shown."""


class GrepArgs(ToolArgs):
    """Arguments of ``grep``."""

    pattern: str = Field(
        description="RE2 regular expression (Python-like syntax; no backreferences "
        "or lookaround)"
    )
    path: str = Field(default=".", description="File or folder to search")
    glob: str | None = Field(default=None, description="Only files whose name matches")
    ignore_case: bool = False


class _Pattern(Protocol):
    """What grep uses of a compiled `re2` pattern (re2 ships no types)."""

    def search(self, text: str) -> object | None:
        """A match object, or None when TEXT has no match."""


def _compile(pattern: str, ignore_case: bool) -> tuple[_Pattern, _Pattern | None]:
    """The per-line matcher and a whole-file prefilter (None when unsound)."""
    import re2  # loaded with the first search, not at every start

    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    try:
        line_rx: _Pattern = re2.compile(pattern, options)
        # A line that matches is also a match of the multi-line pattern over the
        # whole file (``^``/``$`` at line ends), so a file with no whole-text
        # match is skipped in one linear pass. ``\A``/``\z`` break that.
        anchored = "\\A" in pattern or "\\z" in pattern
        file_rx: _Pattern | None = (
            None if anchored else re2.compile("(?m)" + pattern, options))
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise ToolError(f"bad regular expression: {why}") from None
    return line_rx, file_rx


def _files(root: Path, args: GrepArgs, skipped: Skipped, deadline: Deadline) -> list[Entry]:
    real = resolve_in_root(root, args.path)
    shown = display_path(root, real)
    try:
        kind = special_kind(real.stat().st_mode)
    except FileNotFoundError:
        raise ToolError(f"{args.path}: no such file or folder") from None
    if kind is None:
        return [Entry(shown, real, False)]
    if kind != "folder":
        raise not_regular(shown, kind)
    real_root = resolve_in_root(root, ".")
    prefix = "" if shown == "." else shown + "/"
    pattern = args.glob

    def want(rel: str) -> bool:
        return pattern is None or PurePath(rel).match(pattern)

    found = walk(real_root, real, deadline, skipped, want=want)
    return [Entry(prefix + e.rel, e.real, False) for e in found if not e.is_dir]


def _grep(root: Path, args: GrepArgs, cap: int, deadline: Deadline) -> str:
    line_rx, file_rx = _compile(args.pattern, args.ignore_case)
    skipped = Skipped()
    hits: list[str] = []
    notes: list[str] = []
    total = 0
    for entry in _files(root, args, skipped, deadline):
        deadline.check()
        try:
            with open_regular(entry.real, entry.rel) as f:
                data = read_upto(f, MAX_GREP_FILE + 1)
        except ToolError as exc:
            skipped.add(entry.rel, str(exc).rpartition(": ")[2])
            continue
        except OSError as exc:
            skipped.add(entry.rel, exc.strerror or "unreadable")
            continue
        if len(data) > MAX_GREP_FILE:
            skipped.add(entry.rel, f"larger than {MAX_GREP_FILE // (1024 * 1024)} MiB")
            continue
        total += len(data)
        if total > MAX_GREP_TOTAL:
            notes.append(f"[stopped after searching {MAX_GREP_TOTAL // (1024 * 1024)} MiB]")
            break
        if is_binary(data):
            continue
        text = data.decode("utf-8", "replace")
        if file_rx is not None and file_rx.search(text) is None:
            continue
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        for n, line in enumerate(lines, 1):
            if n % 2048 == 0:
                deadline.check()
            line = line.removesuffix("\r")
            if line_rx.search(line) is None:
                continue
            hits.append(f"{entry.rel}:{n}: {line[:MAX_SHOWN_LINE]}")
            if len(hits) >= MAX_MATCHES:
                notes.append(f"[stopped after {MAX_MATCHES} matches]")
                break
        if len(hits) >= MAX_MATCHES:
            break
    tail = "\n".join([*notes, skipped.note()]).strip("\n")
    body = "\n".join(hits) or "(no matches)"
    if not tail:
        return cap_text(body, cap)
    return cap_text(body, max(cap - len(tail.encode()) - 1, 128)) + "\n" + tail


async def grep(ctx: ToolContext, args: GrepArgs) -> str:
    """Lines matching a regular expression, as ``path:line: text``."""
    return await run_blocking(ctx, "grep", lambda d: _grep(ctx.root, args, ctx.output_cap, d))


GREP_TOOL = Tool(
    "grep",
    "read",
    "Search files of the workspace for an RE2 regular expression.",
    GrepArgs,
    grep,
    lambda a: f"Grep {a.pattern!r} in {a.path}",
)
"""The grep tool (one of the read tools)."""
