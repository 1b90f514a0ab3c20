"""Crash-safe file primitives: atomic replace, directory fsync, moves across filesystems.

Everything tandem writes under ``TANDEM_HOME`` is private to the user
(journals hold tool output, checkpoints copies of untracked ``.env`` files):
files are created 0600 and folders 0700 here, whatever the umask. Every
writer of tandem's state creates through these functions (`private_dir`,
`atomic_write`, `open_private`, `create_private`, `touch_private`);
``tests/python/security/test_private_writers.py`` fails on a new writer that
does not.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from tandem import faults

PRIVATE_FILE_MODE = 0o600
"""Mode of every file tandem creates in its state."""
PRIVATE_DIR_MODE = 0o700
"""Mode of every folder tandem creates in its state."""


def private_dir(path: Path) -> Path:
    """Create folder PATH and its missing parents as 0700; return PATH.

    Unlike ``Path.mkdir(parents=True, mode=…)``, every created level gets the
    private mode, not only the last. Existing folders are left as they are
    (`tandem.paths.tighten_home` fixes those).
    """
    missing: list[Path] = []
    current = path
    while not os.path.isdir(current) and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE_DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise
    return path


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open`` PATH with FLAGS, creating it 0600; return the descriptor.

    A file that already existed with group or other bits (left by an older
    version, or a stale temp file) is made 0600 too. FLAGS gets ``O_CREAT``.
    """
    fd = os.open(path, flags | os.O_CREAT, PRIVATE_FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, PRIVATE_FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_private(path: str | os.PathLike[str], text: bool = False) -> IO[Any]:
    """Open PATH for writing from empty, created 0600: a binary file, or utf-8 TEXT."""
    fd = open_private(path, os.O_WRONLY | os.O_TRUNC)
    if text:
        return os.fdopen(fd, "w", encoding="utf-8")
    return os.fdopen(fd, "wb")


def touch_private(path: Path) -> None:
    """Set PATH's mtime to now, creating it empty and 0600 when it is missing."""
    os.close(open_private(path, os.O_WRONLY))
    os.utime(path)


def fsync_dir(path: Path) -> None:
    """fsync directory PATH so a rename or create inside it is durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, mode: int = PRIVATE_FILE_MODE) -> None:
    """Replace PATH with DATA: write a temp file beside it, fsync, rename, fsync dir.

    The new file has MODE (default private, 0600), whatever the old one had.
    """
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fchmod(fd, mode)  # a stale temp file of the same name kept its old mode
            faults.point("atomic.fsync")
            os.fsync(fd)
        finally:
            os.close(fd)
        faults.point("atomic.rename")
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    faults.point("atomic.renamed")
    fsync_dir(path.parent)


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _tree_digest(path: Path) -> dict[str, str]:
    if path.is_file():
        return {"": _file_digest(path)}
    out: dict[str, str] = {}
    for p in sorted(path.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(path))] = _file_digest(p)
    return out


def move(src: Path, dst: Path, rename: Callable[[Path, Path], None] = os.rename) -> None:
    """Move file or folder SRC to DST (which must not exist).

    Same filesystem: one ``rename``. Across filesystems (EXDEV): copy to a
    temp name beside DST, verify every byte by digest, rename into place,
    then delete SRC; on any failure before the delete, the copy is removed
    and SRC is untouched.
    """
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, "destination exists", str(dst))
    try:
        rename(src, dst)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    tmp = dst.with_name(f".{dst.name}.moving-{os.getpid()}")
    try:
        if src.is_dir():
            shutil.copytree(src, tmp, symlinks=True)
        else:
            shutil.copy2(src, tmp)
        for p in [tmp, *tmp.rglob("*")] if tmp.is_dir() else [tmp]:
            if p.is_file():
                fd = os.open(p, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        if _tree_digest(src) != _tree_digest(tmp):
            raise OSError(errno.EIO, "copy verification failed", str(dst))
        os.rename(tmp, dst)
        fsync_dir(dst.parent)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            _unlink_quietly(tmp)
        raise
    if src.is_dir():
        shutil.rmtree(src)
    else:
        os.unlink(src)
    fsync_dir(src.parent)


WALK_LIMIT = 200_000
"""Most entries one private-mode walk looks at (a bound on start-up work)."""


def _walk_modes(root: Path, limit: int) -> tuple[list[tuple[str, os.stat_result]], bool]:
    """(path, lstat) of ROOT and what lies below it that group or others may
    use, symlinks not followed; second value False when LIMIT entries were
    seen before the end."""
    try:
        top = os.stat(root)
    except OSError:
        return [], True
    found = [(str(root), top)] if _private_mode(top) is not None else []
    stack = [str(root)]
    seen = 1
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    seen += 1
                    if seen > limit:
                        return found, False
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue  # gone meanwhile
                    if st.st_mode & 0o077 and not stat.S_ISLNK(st.st_mode):
                        found.append((entry.path, st))
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
        except OSError:
            continue
    return found, True


def _private_mode(st: os.stat_result) -> int | None:
    """The private mode ST should have, or None when it has it already (or is a link)."""
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode) or not mode & 0o077:
        return None
    if stat.S_ISDIR(st.st_mode):
        return (mode & 0o700) | PRIVATE_DIR_MODE
    return mode & 0o700


def loose_entries(root: Path, limit: int = WALK_LIMIT) -> tuple[list[tuple[Path, int]], bool]:
    """(path, mode) of each entry under ROOT (ROOT included) that group or others
    may use; second value False when the walk stopped at LIMIT entries."""
    found, complete = _walk_modes(root, limit)
    return [(Path(p), stat.S_IMODE(st.st_mode)) for p, st in found], complete


def tighten_tree(root: Path, limit: int = WALK_LIMIT) -> tuple[int, bool]:
    """Remove group and other permission bits from ROOT and everything below it.

    Folders become at least 0700 for the owner. Symlinks are not followed;
    entries another user owns are skipped. Returns (entries changed, whether
    the walk reached the end before LIMIT entries).
    """
    found, complete = _walk_modes(root, limit)
    changed = 0
    uid = os.geteuid()
    for path, st in found:
        wanted = _private_mode(st)
        if wanted is None or st.st_uid != uid:
            continue
        try:
            # Not a symlink (lstat said so); only the user can change our folders.
            os.chmod(path, wanted)
        except OSError:
            continue
        changed += 1
    return changed, complete
