"""Restore a captured tree onto the root, as one transaction.

`restore_ops` turns "current capture → checkpoint" into file operations,
leaving alone every path it could not back up or restore exactly (gaps, and
files on disk that the current capture did not include). `apply` performs
them and, if any operation fails, puts every file it touched back as it was
in the backup capture before re-raising. A `pending` record on disk names
the backup while the restore runs, so a crash midway is rolled back by the
next operation on the workspace (see `Checkpointer.recover`).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from tandem import faults
from tandem.checkpoints.diffing import RawChange, covered
from tandem.checkpoints.git import Git
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import Gap, RestoreGap

FileHook = Callable[[str], None]
"""Called with each path just before the restore touches it (fault-injection seam)."""

TEMP_PATTERN = ".{name}.tandem-{token}"
"""The temporary copy of file NAME beside it while one restore (TOKEN) writes it."""

_ABSENT = "000000"


def _read_umask() -> int:
    """The process umask, read without changing it (os.umask would, briefly)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


_UMASK = _read_umask()


class RollbackFailed(TandemError):
    """Putting files back failed: the pending record must stay for a retry."""

    def __init__(self, failures: list[str]) -> None:
        super().__init__(
            "restore-failed",
            "restore failed and rollback could not put back: " + "; ".join(failures[:10]),
            {"paths": failures},
        )


@dataclass(frozen=True)
class Op:
    """Bring PATH to the checkpoint's state: a blob and mode, or absent."""

    path: str
    sha: str | None
    mode: str | None
    backup_sha: str | None
    backup_mode: str | None


@dataclass
class Ops:
    """The operations of one restore, and the paths it leaves alone."""

    deletes: list[Op] = field(default_factory=list)
    writes: list[Op] = field(default_factory=list)
    gaps: list[RestoreGap] = field(default_factory=list)


def restore_ops(
    root: Path | None, changes: list[RawChange], target_gaps: list[Gap], current_gaps: list[Gap]
) -> Ops:
    """Operations taking the current capture to the target (CHANGES: current → target).

    With ROOT, a file on disk that the current capture lacks is left alone
    (no backup of it exists); None skips that look (recomputing a past restore).
    """
    ops = Ops()
    for g in target_gaps:
        ops.gaps.append(
            RestoreGap(
                path=g.path,
                kind="gap-at-checkpoint",
                detail=f"{g.reason} when the checkpoint was taken; left as it is now",
            )
        )
    for c in changes:
        if covered(c.path, target_gaps):
            continue
        if covered(c.path, current_gaps):
            ops.gaps.append(
                RestoreGap(
                    path=c.path,
                    kind="gap-now",
                    detail="cannot be backed up now (too large or unreadable); not restored",
                )
            )
            continue
        old_sha = None if c.old_mode == _ABSENT else c.old_sha
        old_mode = None if c.old_mode == _ABSENT else c.old_mode
        if c.new_mode == _ABSENT:
            ops.deletes.append(Op(c.path, None, None, old_sha, old_mode))
            continue
        if old_sha is None and root is not None and _is_uncaptured_file(root / c.path):
            # On disk but not in the current capture (ignored now?): no backup.
            ops.gaps.append(
                RestoreGap(
                    path=c.path,
                    kind="not-captured-now",
                    detail="exists but is not captured now (ignored?); not overwritten",
                )
            )
            continue
        ops.writes.append(Op(c.path, c.new_sha, c.new_mode, old_sha, old_mode))
    ops.gaps.sort(key=lambda g: g.path)
    return ops


def _is_uncaptured_file(full: Path) -> bool:
    """True when something other than a directory is at FULL.

    A directory in the way is fine when the deletions empty it; when they do
    not (it holds ignored files), writing fails and the restore rolls back.
    """
    try:
        return not stat.S_ISDIR(os.lstat(full).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False


class _Journal:
    """What `apply` did so far, so a failure can undo exactly that."""

    def __init__(self) -> None:
        self.touched: list[Op] = []
        self.made_dirs: list[Path] = []


def new_token() -> str:
    """A fresh restore token: it names every temporary file of one restore."""
    return secrets.token_hex(8)


def temp_name(full: Path, token: str) -> Path:
    """The temporary copy of FULL written by the restore TOKEN (see `TEMP_PATTERN`)."""
    return full.with_name(TEMP_PATTERN.format(name=full.name, token=token))


STAGE_FILES = 64
STAGE_BYTES = 8 * 1024 * 1024
"""Files restored per batch, and their bytes at most (beyond one large file)."""
_SYNC_THREADS = 8


def apply(git: Git, root: Path, ops: Ops, hook: FileHook | None, token: str) -> None:
    """Perform OPS; on any failure roll back what was done, then re-raise.

    Every temporary copy is named with TOKEN, so a crash's leftovers can be
    found exactly (`sweep_temp`) without guessing at a user's files. Files
    are written in batches: each batch's temporary copies are written, then
    made durable together (one fsync each, on a few threads: the file system
    commits them at once, where one after the other each waited for its own
    journal commit — 1,000 files took seconds), then moved into place one by
    one, HOOK called before each as before.
    """
    journal = _Journal()
    staged: list[Path] = []
    try:
        for op in ops.deletes:
            if hook is not None:
                hook(op.path)
            journal.touched.append(op)
            _delete(root, op.path)
        # Blobs stream in the order of the writes: memory holds one batch at a time.
        with closing(git.blobs(op.sha for op in ops.writes if op.sha)) as blobs:
            for batch in _batches(zip(ops.writes, blobs, strict=True)):
                staged = []
                for op, (_, data) in batch:
                    assert op.mode is not None
                    staged.append(_stage(root, op.path, data, op.mode, journal.made_dirs, token))
                _sync(staged)
                for (op, _), tmp in zip(batch, list(staged), strict=True):
                    if hook is not None:
                        hook(op.path)
                    journal.touched.append(op)
                    faults.point("restore.file")
                    os.replace(tmp, _safe(root, op.path))
                    staged.pop(0)
    except BaseException:
        for tmp in staged:
            _unlink_quietly(tmp)
        rollback(git, root, journal.touched, journal.made_dirs, token)
        raise


def _batches(pairs: Iterator[tuple[Op, tuple[str, bytes]]]) -> Iterator[
        list[tuple[Op, tuple[str, bytes]]]]:
    """PAIRS in lists of `STAGE_FILES` files or `STAGE_BYTES` bytes, whichever comes first."""
    batch: list[tuple[Op, tuple[str, bytes]]] = []
    size = 0
    for pair in pairs:
        batch.append(pair)
        size += len(pair[1][1])
        if len(batch) >= STAGE_FILES or size >= STAGE_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _sync(paths: list[Path]) -> None:
    """fsync each regular file of PATHS, a few at once (symbolic links need none)."""
    files = [p for p in paths if not os.path.islink(p)]
    if len(files) <= 1:
        for p in files:
            _fsync(p)
        return
    with ThreadPoolExecutor(min(_SYNC_THREADS, len(files))) as pool:
        list(pool.map(_fsync, files))  # list(): the first error is raised here


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def rollback(
    git: Git, root: Path, touched: list[Op], made_dirs: list[Path], token: str
) -> None:
    """Put every path of TOUCHED back to its backup state; remove MADE_DIRS if empty."""
    failures: list[str] = []
    undo = list(reversed(touched))
    with closing(git.blobs(op.backup_sha for op in undo if op.backup_sha)) as blobs:
        for op in undo:
            try:
                if op.backup_sha is None or op.backup_mode is None:
                    _delete(root, op.path)
                else:
                    _, data = next(blobs)
                    _write(root, op.path, data, op.backup_mode, [], token)
            except Exception as e:  # noqa: BLE001 - keep putting back the others
                failures.append(f"{op.path}: {e}")
    for d in reversed(made_dirs):
        try:
            d.rmdir()
        except OSError:
            pass
    if failures:
        raise RollbackFailed(failures)


def _safe(root: Path, rel: str) -> Path:
    """ROOT/REL, refusing anything that could land outside ROOT or in a .git."""
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts):
        raise TandemError("invalid", f"refusing to restore unsafe path {rel!r}")
    # A parent that is a symbolic link (say, one the ignore rules hide) would
    # carry the write or the delete outside the root.
    parent = root
    for part in parts[:-1]:
        parent = parent / part
        try:
            if stat.S_ISLNK(os.lstat(parent).st_mode):
                raise OSError(errno.ELOOP, "refusing to go through a symbolic link", str(parent))
        except FileNotFoundError:
            break
    return root.joinpath(*parts)


def _delete(root: Path, rel: str) -> None:
    full = _safe(root, rel)
    try:
        if stat.S_ISDIR(os.lstat(full).st_mode):
            return  # no file here; a directory is left to the operations under it
        os.unlink(full)
    except (FileNotFoundError, NotADirectoryError):
        return  # already absent (a parent is gone or is a file now)
    # Remove directories our deletion emptied (git does not keep empty ones).
    parent = full.parent
    while parent != root:
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


def sweep_temp(root: Path, paths: list[str], token: str) -> list[str]:
    """Remove the temporary copies restore TOKEN may have left beside PATHS.

    Only the exact name `TEMP_PATTERN` gives for each path is considered,
    and only a regular file or a symbolic link there is removed (never
    followed); a parent that is a symbolic link is not entered. Returns the
    removed names, relative to ROOT.
    """
    removed: list[str] = []
    for rel in paths:
        try:
            tmp = temp_name(_safe(root, rel), token)
            kind = os.lstat(tmp).st_mode
            if not (stat.S_ISREG(kind) or stat.S_ISLNK(kind)):
                continue
            os.unlink(tmp)
        except (OSError, TandemError):
            continue  # absent (the usual case), or not ours to touch
        removed.append(tmp.relative_to(root).as_posix())
    return sorted(removed)


def _stage(root: Path, rel: str, data: bytes, mode: str, made_dirs: list[Path],
           token: str) -> Path:
    """Write DATA as REL's temporary copy (not yet durable, not yet in place); its path."""
    full = _safe(root, rel)
    _make_parents(root, full.parent, made_dirs)
    tmp = temp_name(full, token)
    try:
        if mode == "120000":
            os.symlink(os.fsdecode(data), tmp)
        else:
            perms = _perms(full, executable=mode == "100755")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, perms)
            finally:
                os.close(fd)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _write(
    root: Path, rel: str, data: bytes, mode: str, made_dirs: list[Path], token: str
) -> None:
    """Put DATA at REL now: staged, made durable, moved into place (a rollback's way)."""
    tmp = _stage(root, rel, data, mode, made_dirs, token)
    try:
        if mode != "120000":
            _fsync(tmp)
        faults.point("restore.file")
        os.replace(tmp, _safe(root, rel))
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _perms(full: Path, *, executable: bool) -> int:
    """Keep the file's current permission bits; set or clear only the x bits."""
    try:
        st = os.lstat(full)
        base = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else 0o666 & ~_UMASK
    except FileNotFoundError:
        base = 0o666 & ~_UMASK
    if executable:
        return base | ((base & 0o444) >> 2)
    return base & ~0o111


def _make_parents(root: Path, parent: Path, made_dirs: list[Path]) -> None:
    missing: list[Path] = []
    d = parent
    while d != root and not os.path.lexists(d):
        missing.append(d)
        d = d.parent
    for d in reversed(missing):
        d.mkdir()
        made_dirs.append(d)
