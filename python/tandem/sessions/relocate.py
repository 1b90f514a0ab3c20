"""Re-rooting: move a session's journal and artifact folder under a new cwd.

Three steps, each a seam of `MoveOps` so tests can fail any one of them:
move the journal, move the artifact folder, rewrite the header (new cwd,
old path appended to ``previous_files``). Any failure undoes the steps
already done, in reverse; the error says "Nothing was moved" or names what
could not be restored. The session id never changes; history is untouched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tandem.protocol.base import TandemError
from tandem.store import fsutil, layout
from tandem.store.jsonl import read_header, rewrite_header_file
from tandem.store.lock import JournalLock, LockHeld


class MoveOps:
    """The three steps of a move; subclass to inject faults in tests."""

    def move_journal(self, src: Path, dst: Path) -> None:
        """Move the journal file (rename, or copy+verify+delete across filesystems)."""
        fsutil.move(src, dst)

    def move_artifacts(self, src: Path, dst: Path) -> None:
        """Move the artifact folder the same way."""
        fsutil.move(src, dst)

    def replace_header(self, tmp: Path, path: Path) -> None:
        """The rename that installs the rewritten journal over the old one."""
        os.replace(tmp, path)


@dataclass
class Moved:
    """A finished move: the new journal PATH, the OLD one, and the lock now held on PATH."""

    path: Path
    old: Path
    lock: JournalLock


def relocate(home: Path, journal: Path, dest_cwd: str, ops: MoveOps | None = None) -> Moved:
    """Move the session at JOURNAL under DEST_CWD's folder in HOME (see module doc).

    Refuses (code ``busy``) while another live process holds the session.
    """
    ops = ops or MoveOps()
    header, _ = read_header(journal)
    try:
        dest = layout.canonical_cwd(dest_cwd)
    except ValueError as exc:
        raise TandemError("invalid", str(exc)) from None
    if not os.path.isdir(dest):
        raise TandemError("invalid", f"Destination directory does not exist: {dest}")
    try:
        src_lock = JournalLock.acquire(layout.lock_path(journal))
    except LockHeld as held:
        raise TandemError(
            "busy",
            f"Session {header.id} is in use by {held.holder.describe()}; it cannot be "
            "moved while another process has it open. Nothing was moved.",
        ) from None
    try:
        folder = layout.slug_dir(home, dest, create=True)
        dst = folder / journal.name
        if dst == journal:
            # Already in DEST's folder with a stale header cwd: a move that was
            # interrupted (crash) between its rename and its header rewrite.
            if header.cwd == dest:
                raise TandemError("invalid", f"Session {header.id} already belongs to {dest}")
            rewrite_header_file(journal, header.model_copy(update={"cwd": dest}))
            return Moved(path=journal, old=journal, lock=src_lock)
        src_art, dst_art = layout.artifacts_dir(journal), layout.artifacts_dir(dst)
        if os.path.lexists(dst) or os.path.lexists(dst_art):
            raise TandemError("exists", f"{dst} already exists. Nothing was moved.")
        dst_lock = JournalLock.acquire(layout.lock_path(dst))
    except BaseException:
        src_lock.release(unlink=False)
        raise
    moved_journal = moved_art = False
    try:
        ops.move_journal(journal, dst)
        moved_journal = True
        if os.path.isdir(src_art):
            ops.move_artifacts(src_art, dst_art)
            moved_art = True
        new_header = header.model_copy(
            update={"cwd": dest, "previous_files": [*header.previous_files, str(journal)]}
        )
        rewrite_header_file(dst, new_header, replace=ops.replace_header)
        fsutil.fsync_dir(journal.parent)
    except Exception as exc:
        lost = _roll_back(journal, dst, src_art, dst_art, moved_journal, moved_art)
        dst_lock.release()
        src_lock.release(unlink=False)
        why = getattr(exc, "message", None) or str(exc)
        if lost:
            raise TandemError(
                "move-failed",
                f"Moving session {header.id} failed ({why}); could not restore: " + "; ".join(lost),
            ) from exc
        raise TandemError(
            "move-failed", f"Moving session {header.id} failed ({why}). Nothing was moved."
        ) from exc
    src_lock.release()
    return Moved(path=dst, old=journal, lock=dst_lock)


def _roll_back(
    journal: Path, dst: Path, src_art: Path, dst_art: Path, moved_journal: bool, moved_art: bool
) -> list[str]:
    """Undo the moves done so far; return what could not be put back."""
    lost: list[str] = []
    if moved_art:
        try:
            fsutil.move(dst_art, src_art)
        except OSError as exc:
            lost.append(f"artifact folder left at {dst_art} ({exc.strerror or exc})")
    if moved_journal:
        try:
            fsutil.move(dst, journal)
        except OSError as exc:
            lost.append(f"journal left at {dst} ({exc.strerror or exc})")
    return lost
