"""The ACP client's file system: ``fs/read_text_file`` and ``fs/write_text_file``.

Both are confined to the turn's workspace root like the native tools
(`tandem.tools.paths`). A read comes from the Emacs buffer visiting the file
when there is one (unsaved edits included), else from disk through the
bounded, non-blocking reads of `tandem.tools.fsread`. A write is refused in a
read-only turn and under ``.git``; a write to a protected path
(`tandem.tools.protected`) goes ahead only when the user allows it (ASK: the
turn's question), in every permission mode; it goes through the visiting
buffer when there is one, else to disk atomically.

Why a buffer write is also saved: the checkpoint after the turn and its patch
are taken from disk, and the agent's other tools (grep, a shell command) read
the disk, so a change held only in the buffer would be invisible to all of
them and the patch would miss it. The save keeps the buffer's undo list (one
undoable change) and clears its modified flag because buffer and disk agree.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio.to_thread

from tandem.editor import EditorBridge, EditorError
from tandem.tools.base import ToolError
from tandem.tools.edit import MAX_WRITE, write_atomic
from tandem.tools.fsread import BINARY_SNIFF, is_binary, iter_lines, open_regular, read_upto
from tandem.tools.paths import display_path, refuse_git, resolve_in_root
from tandem.tools.protected import DEFAULT_PROTECTED_PATHS
from tandem.tools.protected import check as protected_check

MAX_READ = MAX_WRITE
"""Bytes of one read (the whole file, or the lines asked for); more is an error."""
MAX_LINE = 1024 * 1024
"""Bytes of one line kept in a ranged read of a disk file."""


class FsRefused(Exception):
    """A read or write the client will not do; the message says why (for the agent)."""


def _slice(text: str, line: int | None, limit: int | None) -> str:
    """Lines LINE.. (1-based) of TEXT, at most LIMIT of them; all without either."""
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = max((line or 1) - 1, 0)
    end = len(lines) if limit is None else start + max(limit, 0)
    return "".join(lines[start:end])


def _read_disk(root: Path, real: Path, line: int | None, limit: int | None) -> str:
    shown = display_path(root, real)
    with open_regular(real, shown) as f:
        head = read_upto(f, BINARY_SNIFF)
        if is_binary(head):
            raise ToolError(f"{shown}: binary file, not read")
        if line is None and limit is None:
            data = head + read_upto(f, MAX_READ + 1 - len(head))
            if len(data) > MAX_READ:
                raise ToolError(
                    f"{shown}: larger than {MAX_READ} bytes; read it in parts (line and limit)"
                )
            return data.decode("utf-8", "replace")
        first = max(line or 1, 1)
        last = None if limit is None else first - 1 + max(limit, 0)
        out: list[str] = []
        size = 0
        for n, (raw, _cut) in enumerate(iter_lines(f, MAX_LINE, head), 1):
            if last is not None and n > last:
                break
            if n < first:
                continue
            size += len(raw) + 1
            if size > MAX_READ:
                raise ToolError(f"{shown}: the lines asked for pass {MAX_READ} bytes; ask fewer")
            out.append(raw.decode("utf-8", "replace") + "\n")
        return "".join(out)


def _confined(root: Path, path: str) -> Path:
    try:
        return resolve_in_root(root, path)
    except ToolError as exc:
        raise FsRefused(str(exc)) from None


async def read_text_file(
    editor: EditorBridge, root: Path, path: str, line: int | None = None, limit: int | None = None
) -> str:
    """The text of PATH (inside ROOT), from its visiting buffer if any, else from disk.

    Raises `FsRefused` with the reason when PATH is outside ROOT, missing,
    binary, special, too large, or the editor fails.
    """
    real = _confined(root, path)
    try:
        text = await editor.buffer_text(real)
    except EditorError as exc:
        raise FsRefused(f"{path}: the editor could not give its buffer: {exc}") from None
    if text is not None:
        return _slice(text, line, limit)
    try:
        return await anyio.to_thread.run_sync(_read_disk, root, real, line, limit)
    except ToolError as exc:
        raise FsRefused(str(exc)) from None
    except OSError as exc:
        raise FsRefused(f"{path}: {exc.strerror or exc}") from None


def _write_disk(root: Path, real: Path, content: str) -> None:
    if real.is_dir():
        raise ToolError(f"{display_path(root, real)}: is a folder")
    write_atomic(real, content)


AskWrite = Callable[[Path, str, str], Awaitable[bool]]
"""Asks the user about a protected write: (resolved path, path as given, why) → allowed."""


async def write_text_file(
    editor: EditorBridge, root: Path, path: str, content: str, *, read_only: bool,
    protected: Sequence[str] = DEFAULT_PROTECTED_PATHS, ask: AskWrite | None = None,
) -> Path:
    """Write CONTENT to PATH (inside ROOT, never under ``.git``); return where.

    Through the visiting buffer (then saved) when there is one, else to disk
    atomically. READ_ONLY (a discussion, or read-only mode) refuses it; a path
    under PROTECTED (or the git hooks folder) is written only if ASK says yes.
    """
    if read_only:
        raise FsRefused(f"{path}: refused: this turn is read-only (no file may change)")
    real = _confined(root, path)
    try:
        refuse_git(root, path, real)
    except ToolError as exc:
        raise FsRefused(str(exc)) from None
    reason = await anyio.to_thread.run_sync(protected_check, root, path, real, protected)
    if reason is not None and (ask is None or not await ask(real, path, reason)):
        raise FsRefused(f"{path}: refused: {reason} and the user did not allow this write")
    if len(content.encode("utf-8")) > MAX_WRITE:
        raise FsRefused(f"{path}: content too large (limit {MAX_WRITE} bytes)")
    try:
        if await editor.write_buffer(real, content):
            return real
    except EditorError as exc:
        # Writing to disk under a visiting buffer would leave it stale: refuse.
        raise FsRefused(f"{path}: the editor could not write its buffer: {exc}") from None
    try:
        await anyio.to_thread.run_sync(_write_disk, root, real, content)
    except ToolError as exc:
        raise FsRefused(str(exc)) from None
    except OSError as exc:
        raise FsRefused(f"{path}: {exc.strerror or exc}") from None
    return real
