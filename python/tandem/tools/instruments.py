"""Editor tools: what the user's Emacs knows of the workspace, as read-class tools.

``diagnostics`` (Flymake, and Flycheck when loaded), ``definitions`` and
``references`` (xref, with the backend the file's buffer picks), ``outline``
(treesit or imenu), ``open_buffers`` and ``project_files`` (project.el).
Each call asks the editor (`tandem.editor.EditorBridge.instrument`; Emacs
answers in elisp/tandem-instruments.el) within a time budget: a busy Emacs
makes the call fail, never the turn hang. Paths given are confined to the
root like every file tool's (`paths`); paths Emacs answers with are checked
again, and those outside the root are counted, never shown. Without an
editor (``tandem ask``) every call fails with "needs Emacs". The same tools
serve ACP agents through tandem's own MCP server (`tandem.mcp.instruments`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from tandem.editor import EditorError, NoEditor
from tandem.tools.base import Tool, ToolArgs, ToolContext, ToolError, cap_text
from tandem.tools.paths import display_path, inside, resolve_in_root

EDITOR_TIMEOUT = 10.0
"""Seconds Emacs has to answer one editor tool call (less if the tool budget is less)."""
MAX_ITEMS = 500
"""Diagnostics, cross-references, outline entries or buffers shown at most."""
MAX_FILES = 5000
"""Project files listed at most (``project_files``'s ``limit`` may ask for fewer)."""
MAX_TEXT = 400
"""Characters of one message or summary line shown; the rest is cut."""


class PathArgs(ToolArgs):
    """Arguments of ``outline``."""

    path: str = Field(description="File path, relative to the workspace root")


class DiagnosticsArgs(ToolArgs):
    """Arguments of ``diagnostics``."""

    path: str | None = Field(
        default=None,
        description="File path, relative to the workspace root; without it, every "
        "visited file")


class XrefArgs(ToolArgs):
    """Arguments of ``definitions`` and ``references``."""

    path: str = Field(description="File (relative to the workspace root) whose buffer "
                      "picks the xref backend")
    symbol: str = Field(min_length=1, max_length=256, description="The identifier")
    line: int | None = Field(
        default=None, ge=1,
        description="The line of PATH where the symbol occurs (a language server "
        "resolves it there)")


class NoArgs(ToolArgs):
    """Arguments of ``open_buffers``: none."""


class ProjectFilesArgs(ToolArgs):
    """Arguments of ``project_files``."""

    limit: int = Field(default=1000, ge=1, le=MAX_FILES, description="How many files at most")


# -- asking ---------------------------------------------------------------


def _real_root(ctx: ToolContext) -> Path:
    return Path(os.path.realpath(ctx.root))


async def _ask(ctx: ToolContext, tool: str, instrument: str, params: dict[str, object]) -> Any:
    """Emacs's answer to INSTRUMENT, or `ToolError` naming TOOL and what went wrong."""
    editor = ctx.editor if ctx.editor is not None else NoEditor()
    budget = min(ctx.tool_timeout, EDITOR_TIMEOUT)
    sent = {**params, "root": str(_real_root(ctx)), "budget": budget}
    try:
        answer = await editor.instrument(instrument, sent, budget)
    except EditorError as exc:
        raise ToolError(f"{tool}: {exc}") from None
    if not isinstance(answer, dict):
        raise ToolError(f"{tool}: Emacs gave no answer (got {type(answer).__name__})")
    return answer


def _items(value: Any) -> list[dict[str, object]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _text(value: Any, cap: int = MAX_TEXT) -> str:
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = " ".join(text.split())
    return text if len(text) <= cap else text[:cap] + "…"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Shown:
    """Which paths of Emacs's answer may be shown: those that resolve inside the root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.outside = 0

    def rel(self, file: Any) -> str | None:
        """FILE relative to the root, or None (and counted) when it is outside."""
        if not isinstance(file, str) or not file or "\x00" in file:
            self.outside += 1
            return None
        real = Path(os.path.realpath(file))
        if not inside(self.root, real):
            self.outside += 1
            return None
        return display_path(self.root, real)

    def note(self, what: str) -> str:
        """A line saying how many WHAT were outside the root (empty: none)."""
        if not self.outside:
            return ""
        return f"\n[{self.outside} {what} outside the workspace root, not shown]"


def _more(total: int, shown: int, what: str) -> str:
    return f"\n[{total - shown} more {what} not shown]" if total > shown else ""


def _past(items: list[Any], what: str) -> str:
    # Emacs sends one past the cap, so "more" is known, not how many.
    return f"\n[{what} past the first {MAX_ITEMS} not shown]" if len(items) > MAX_ITEMS else ""


def _finish(ctx: ToolContext, text: str) -> str:
    return cap_text(text, ctx.output_cap)


# -- the tools ------------------------------------------------------------


def _checkers(buf: dict[str, object]) -> str:
    checkers = buf.get("checkers")
    names = [c for c in checkers if isinstance(c, str)] if isinstance(checkers, list) else []
    return ", ".join(names) if names else "no Flymake or Flycheck in this buffer"


async def diagnostics(ctx: ToolContext, args: DiagnosticsArgs) -> str:
    """Flymake's (and Flycheck's) diagnostics of visited buffers under the root."""
    params: dict[str, object] = {"limit": MAX_ITEMS + 1}
    shown_path: str | None = None
    if args.path is not None:
        real = resolve_in_root(ctx.root, args.path)
        params["path"] = str(real)
        shown_path = display_path(ctx.root, real)
    answer = await _ask(ctx, "diagnostics", "diagnostics", params)
    shown = _Shown(_real_root(ctx))
    buffers = _items(answer.get("buffers"))
    if shown_path is not None and not buffers:
        return (f"{shown_path}: no Emacs buffer visits this file, so Emacs has no "
                "diagnostics for it (Flymake and Flycheck check visited buffers only).")
    out: list[str] = []
    count = 0
    for buf in buffers:
        rel = shown.rel(buf.get("file"))
        if rel is None:
            continue
        items = _items(buf.get("items"))
        state = " (unsaved edits)" if buf.get("modified") else ""
        out.append(f"{rel}{state}: {len(items)} diagnostic{'s' if len(items) != 1 else ''} "
                   f"({_checkers(buf)})")
        for item in items:
            count += 1
            if count > MAX_ITEMS:
                break
            line, col = _int(item.get("line")) or 0, _int(item.get("col")) or 0
            end = _int(item.get("end_line"))
            where = f"{line}:{col}" + (f"-{end}" if end and end != line else "")
            source = _text(item.get("source"), 80)
            out.append(f"  {rel}:{where}: {_text(item.get('severity'), 20) or 'note'}"
                       f"{f' [{source}]' if source else ''}: {_text(item.get('message'))}")
    if not out:
        return ("No buffer under the workspace root is visited in Emacs: "
                "no diagnostics to report." + shown.note("buffers"))
    text = "\n".join(out)
    if count > MAX_ITEMS:
        text += f"\n[diagnostics past the first {MAX_ITEMS} not shown]"
    return _finish(ctx, text + shown.note("buffers"))


def _xref(kind: str) -> Callable[[ToolContext, XrefArgs], Any]:
    async def run(ctx: ToolContext, args: XrefArgs) -> str:
        real = resolve_in_root(ctx.root, args.path)
        if not real.is_file():
            raise ToolError(f"{display_path(ctx.root, real)}: not a file")
        params: dict[str, object] = {"path": str(real), "symbol": args.symbol, "kind": kind,
                                  "limit": MAX_ITEMS + 1}
        if args.line is not None:
            params["line"] = args.line
        answer = await _ask(ctx, kind, "xref", params)
        backend = _text(answer.get("backend"), 80) or "none"
        via = display_path(ctx.root, real)
        visited = "visited in Emacs" if answer.get("visited") else \
            "not visited: read into a temporary buffer"
        head = f"{kind.capitalize()} of {args.symbol} (xref backend: {backend}; {via} {visited})"
        shown = _Shown(_real_root(ctx))
        lines: list[str] = []
        items = _items(answer.get("items"))
        for item in items[:MAX_ITEMS]:
            rel = shown.rel(item.get("file"))
            if rel is None:
                continue
            line, col = _int(item.get("line")) or 0, _int(item.get("col")) or 0
            lines.append(f"{rel}:{line}:{col}: {_text(item.get('summary'))}")
        if not lines:
            body = f"\nNone found.{shown.note('locations')}"
            return _finish(ctx, head + body)
        return _finish(ctx, head + ":\n" + "\n".join(lines)
                       + _past(items, "locations") + shown.note("locations"))
    return run


async def outline(ctx: ToolContext, args: PathArgs) -> str:
    """The symbols of a file with their line ranges, from treesit or imenu."""
    real = resolve_in_root(ctx.root, args.path)
    if not real.is_file():
        raise ToolError(f"{display_path(ctx.root, real)}: not a file")
    answer = await _ask(ctx, "outline", "outline", {"path": str(real), "limit": MAX_ITEMS + 1})
    rel = display_path(ctx.root, real)
    source = _text(answer.get("source"), 40) or "none"
    items = _items(answer.get("items"))
    state = " (unsaved edits)" if answer.get("modified") else ""
    head = f"Outline of {rel}{state} (from {source}, mode {_text(answer.get('mode'), 60)})"
    if not items:
        return f"{head}: no symbols found."
    lines = []
    for item in items[:MAX_ITEMS]:
        depth = min(_int(item.get("depth")) or 0, 8)
        start, end = _int(item.get("line")) or 0, _int(item.get("end_line"))
        span = f"lines {start}-{end}" if end and end > start else f"line {start}"
        kind = _text(item.get("kind"), 40)
        lines.append(f"{'  ' * depth}{_text(item.get('name'), 200)}"
                     f"{f' ({kind})' if kind else ''}: {span}")
    return _finish(ctx, head + ":\n" + "\n".join(lines) + _past(items, "symbols"))


async def open_buffers(ctx: ToolContext, args: NoArgs) -> str:
    """Files under the root Emacs visits, which are modified, the selected window's region."""
    answer = await _ask(ctx, "open_buffers", "open_buffers", {"limit": MAX_ITEMS + 1})
    shown = _Shown(_real_root(ctx))
    lines = []
    buffers = _items(answer.get("buffers"))
    for buf in buffers[:MAX_ITEMS]:
        rel = shown.rel(buf.get("file"))
        if rel is None:
            continue
        flags = ", ".join(f for f in (
            "modified (unsaved edits)" if buf.get("modified") else "",
            "read-only" if buf.get("read_only") else "") if f)
        lines.append(f"{rel} ({_text(buf.get('mode'), 60)}{', ' + flags if flags else ''})")
    text = ("Buffers visiting files under the workspace root:\n" + "\n".join(lines)
            if lines else "Emacs visits no file under the workspace root.")
    text += _past(buffers, "buffers")
    window = answer.get("window")
    if isinstance(window, dict):
        rel = shown.rel(window.get("file"))
        if rel is not None:
            where = f"point at line {_int(window.get('line')) or 0}"
            start, end = _int(window.get("region_start")), _int(window.get("region_end"))
            if start is not None and end is not None:
                where += f", region lines {start}-{end}"
            text += f"\nSelected window: {rel}, {where}"
    return _finish(ctx, text + shown.note("buffers"))


async def project_files(ctx: ToolContext, args: ProjectFilesArgs) -> str:
    """project.el's files of the project at the root (its ignores honoured), capped."""
    answer = await _ask(ctx, "project_files", "project_files", {"limit": args.limit})
    if not answer.get("project"):
        return ("Emacs finds no project (project.el) at the workspace root; "
                "use list_files instead.")
    shown = _Shown(_real_root(ctx))
    names = sorted(r for r in (shown.rel(f) for f in answer.get("files") or []) if r)
    total = _int(answer.get("total")) or len(names)
    head = f"Project files ({_text(answer.get('project'), 120)}; {total} in all):"
    return _finish(ctx, head + "\n" + "\n".join(names[:args.limit])
                   + _more(total, min(len(names), args.limit), "files")
                   + shown.note("files"))


EDITOR_TOOLS = [
    Tool("diagnostics", "read",
         "Diagnostics (errors, warnings) Emacs's Flymake or Flycheck reports for a file, "
         "or for every visited file, unsaved edits included.",
         DiagnosticsArgs, diagnostics,
         lambda a: f"Diagnostics {a.path}" if a.path else "Diagnostics of open buffers"),
    Tool("definitions", "read",
         "Where a symbol is defined, by Emacs's xref in a buffer of PATH (a language "
         "server where one runs, else tags).",
         XrefArgs, _xref("definitions"), lambda a: f"Definitions of {a.symbol}"),
    Tool("references", "read",
         "Where a symbol is used, by Emacs's xref in a buffer of PATH.",
         XrefArgs, _xref("references"), lambda a: f"References to {a.symbol}"),
    Tool("outline", "read",
         "The symbols (functions, classes…) of a file with their line ranges, from Emacs.",
         PathArgs, outline, lambda a: f"Outline {a.path}"),
    Tool("open_buffers", "read",
         "The workspace files the user has open in Emacs, which have unsaved edits, and "
         "the selected window's point and region.",
         NoArgs, open_buffers, lambda a: "Open buffers"),
    Tool("project_files", "read",
         "The project's files as Emacs's project.el lists them (its ignores honoured).",
         ProjectFilesArgs, project_files, lambda a: "Project files"),
]
"""The editor tools, all read-class."""
