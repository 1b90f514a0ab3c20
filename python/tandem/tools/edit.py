"""Edit-capability tools: exact search-and-replace edit, write a whole file."""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path

from pydantic import Field

from tandem.tools.base import Tool, ToolArgs, ToolContext, ToolError, cap_text
from tandem.tools.budget import Deadline, run_blocking
from tandem.tools.fsread import open_regular, read_upto
from tandem.tools.paths import display_path, refuse_git, resolve_in_root
from tandem.tools.protected import check as protected_check

MAX_WRITE = 10 * 1024 * 1024
MAX_EDIT_DIFF = 8 * 1024
"""Upper bound (bytes) on the diff of a user-edited change the model is told."""


class EditArgs(ToolArgs):
    """Arguments of ``edit_file``."""

    path: str = Field(description="File path, relative to the workspace root")
    old_text: str = Field(description="Exact text to replace (must occur exactly once)")
    new_text: str = Field(description="Replacement text")
    replace_all: bool = Field(default=False, description="Replace every occurrence")


class WriteArgs(ToolArgs):
    """Arguments of ``write_file``."""

    path: str = Field(description="File path, relative to the workspace root")
    content: str = Field(description="The complete new content of the file")


def write_atomic(path: Path, text: str) -> None:
    """Replace PATH with TEXT crash-safely (temp file, fsync, rename), keeping its mode.

    A new file gets 0666 less the user's umask, as an editor would make it."""
    data = text.encode("utf-8")
    if len(data) > MAX_WRITE:
        raise ToolError(f"content too large ({len(data)} bytes, limit {MAX_WRITE})")
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tandem-{os.getpid()}.tmp")
    try:
        # os.open applies the umask to a new file; an existing file's mode is put back below.
        # A name planted by the workspace (a symlink out of it, a file with other modes) is
        # removed, and O_EXCL|O_NOFOLLOW makes sure the file written is the one created here.
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     0o666 if mode is None else mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _target(ctx: ToolContext, path: str) -> Path:
    """PATH resolved inside the root, refused under ``.git`` and, unless the user allowed
    this very write, under a protected path (the executor asks first)."""
    real = resolve_in_root(ctx.root, path)
    refuse_git(ctx.root, path, real)
    if real not in ctx.approved:
        reason = protected_check(ctx.root, path, real, ctx.protected_paths)
        if reason is not None:
            raise ToolError(f"{path}: refused: {reason} and the user did not allow this write")
    return real


def _read_text(real: Path, shown: str) -> str:
    """REAL's text; a `ToolError` naming SHOWN when it is too large or not UTF-8."""
    with open_regular(real, shown) as f:
        data = read_upto(f, MAX_WRITE + 1)
    if len(data) > MAX_WRITE:
        raise ToolError(f"{shown}: larger than {MAX_WRITE} bytes; too large to edit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{shown}: not UTF-8 text; edit_file only edits text") from None


def _replace(text: str, args: EditArgs, shown: str) -> tuple[str, int]:
    """TEXT with ARGS' replacement applied, and how many were made; a `ToolError`
    naming SHOWN when the old text is not there, or there more than once without
    ``replace_all``."""
    count = text.count(args.old_text)
    if count == 0:
        raise ToolError(f"{shown}: old_text not found; read the file and copy the text exactly")
    if count > 1 and not args.replace_all:
        raise ToolError(
            f"{shown}: old_text occurs {count} times; give more context or set replace_all"
        )
    return text.replace(args.old_text, args.new_text), count


def _edit(ctx: ToolContext, args: EditArgs, deadline: Deadline) -> str:
    real = _target(ctx, args.path)
    shown = display_path(ctx.root, real)
    if not real.is_file():
        raise ToolError(f"{shown}: no such file (use write_file to create one)")
    if not args.old_text:
        raise ToolError("old_text must not be empty")
    if args.old_text == args.new_text:
        raise ToolError("old_text and new_text are the same: nothing to do")
    text = _read_text(real, shown)
    edited, count = _replace(text, args, shown)
    deadline.check()
    write_atomic(real, edited)
    return f"Edited {shown}: {count} replacement{'s' if count > 1 else ''}."


async def edit_file(ctx: ToolContext, args: EditArgs) -> str:
    """Replace OLD_TEXT (exactly once, or everywhere with REPLACE_ALL) by NEW_TEXT."""
    return await run_blocking(ctx, "edit_file", lambda d: _edit(ctx, args, d))


def _write(ctx: ToolContext, args: WriteArgs, deadline: Deadline) -> str:
    real = _target(ctx, args.path)
    if real.is_dir():
        raise ToolError(f"{display_path(ctx.root, real)}: is a folder")
    existed = real.exists()
    write_atomic(real, args.content)
    verb = "Overwrote" if existed else "Created"
    return f"{verb} {display_path(ctx.root, real)} ({len(args.content.encode())} bytes)."


async def write_file(ctx: ToolContext, args: WriteArgs) -> str:
    """Create or overwrite a file with CONTENT."""
    return await run_blocking(ctx, "write_file", lambda d: _write(ctx, args, d))


def _text_of(real: Path) -> str | None:
    """REAL's text now: None when it is not a readable UTF-8 file within the write limit."""
    if not real.is_file():
        return None
    try:
        return _read_text(real, real.name)
    except (ToolError, OSError):
        return None


def proposal(args: ToolArgs, before: str | None) -> str | None:
    """The file content the model's call ARGS would leave, the file holding BEFORE.

    None when it would not apply (an ``edit_file`` whose text is not there once).
    """
    if isinstance(args, WriteArgs):
        return args.content
    if isinstance(args, EditArgs) and before is not None and args.old_text:
        try:
            return _replace(before, args, "")[0]
        except ToolError:
            return None
    return None


def edit_diff(shown: str, proposed: str, written: str) -> str:
    """The unified diff from PROPOSED to WRITTEN of file SHOWN, cut to `MAX_EDIT_DIFF`."""
    lines = difflib.unified_diff(proposed.splitlines(keepends=True),
                                 written.splitlines(keepends=True),
                                 f"{shown} (your proposal)", f"{shown} (written)")
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)
    return cap_text(text, MAX_EDIT_DIFF)


def _write_edited(ctx: ToolContext, args: EditArgs | WriteArgs, content: str,
                  deadline: Deadline) -> str:
    real = _target(ctx, args.path)
    shown = display_path(ctx.root, real)
    if real.is_dir():
        raise ToolError(f"{shown}: is a folder")
    before = _text_of(real)
    proposed = proposal(args, before)
    deadline.check()
    write_atomic(real, content)
    done = f"Wrote {shown} ({len(content.encode())} bytes): the content the user chose."
    if proposed is None:
        base = before if before is not None else ""
        return (f"{done} Your call did not apply to the file as it was, and the user "
                "wrote their own content instead; the diff from the file before to what "
                f"was written:\n{edit_diff(shown, base, content)}")
    if proposed == content:
        return f"{done} The user opened your change for editing and accepted it unchanged."
    return (f"{done} The user edited your proposed change before it was written; what "
            "was written differs from your proposal by this unified diff:\n"
            f"{edit_diff(shown, proposed, content)}")


async def write_edited(ctx: ToolContext, name: str, args: EditArgs | WriteArgs,
                       content: str) -> str:
    """Write CONTENT, the user's edit of the change ARGS of call NAME proposed.

    The path goes through the write tools' own guards (inside the root, never
    under ``.git``, a protected path only if the user allowed this write), so
    an edit reaches no file the model's call could not.
    """
    return await run_blocking(ctx, name, lambda d: _write_edited(ctx, args, content, d))


EDIT_TOOLS = [
    Tool(
        "edit_file",
        "edit",
        "Edit a file by exact search and replace: old_text must match the file exactly once.",
        EditArgs,
        edit_file,
        lambda a: f"Edit {a.path}",
        lambda a: [a.path],
    ),
    Tool(
        "write_file",
        "edit",
        "Create a file, or replace a file's whole content.",
        WriteArgs,
        write_file,
        lambda a: f"Write {a.path}",
        lambda a: [a.path],
    ),
]
"""The edit-capability tools."""
