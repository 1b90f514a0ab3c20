"""A private mirror of a remote working dir, for checkpoints and Rewind.

``$TANDEM_HOME/remote-mirrors/<session>/<scope>/``, SCOPE naming the server
and working dir (`mirror_scope`: a session attached elsewhere later gets a
mirror, and a checkpoint store, of its own, so a Rewind never pushes one
working dir's files into another):

| path | what |
| --- | --- |
| `workspace/` | the mirror: the root the checkpointer snapshots and restores |
| `incoming/`, `incoming.tar.gz` | one sync's download and unpacking (removed after) |
| `push.json` | a Rewind's files not yet put back on the server (see `remote.push`) |

`Mirror.sync` downloads the server's ``tar.gz`` archive of the working dir,
unpacks it safely into `incoming/` (`tandem.remote.unpack`: the archive is
untrusted), then makes `workspace/` equal to it: changed files are renamed
into place, unchanged ones are left (their stat data keeps the checkpointer's
index fast), files and folders gone on the server are removed. A sync a
crash interrupted leaves a mirror the next sync repairs; nothing snapshots a
mirror between the two (sync and snapshot run in one call). The mirror is
never inside the project and never holds a key.
"""

from __future__ import annotations

import filecmp
import hashlib
import os
import re
import shutil
from pathlib import Path
from typing import Literal

import anyio.to_thread
from pydantic import BaseModel, Field

from tandem.protocol.base import TandemError
from tandem.remote.client import AgentServerClient
from tandem.remote.unpack import Limits, Unpacked, unpack_archive
from tandem.store import fsutil

MIRRORS = "remote-mirrors"
EXCLUDES = (".git/", "node_modules/", ".venv/", "venv/", "__pycache__/", ".mypy_cache/",
            ".pytest_cache/", ".ruff_cache/", "*.pyc")
"""Never mirrored: git's own store and bulky generated folders (named in every patch)."""

_SESSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

MirrorGapReason = Literal["too-large", "excluded", "not-archived", "odd-name"]


class MirrorGap(BaseModel):
    """What a sync could not bring into the mirror, named (as a checkpoint names its gaps)."""

    path: str
    """Relative to the working dir (POSIX); a pattern for ``excluded``."""
    reason: MirrorGapReason
    detail: str = ""


class MirrorSync(BaseModel):
    """One sync: the mirror ROOT of the server's WORKING_DIR and what changed in it."""

    root: str
    working_dir: str
    files: int
    bytes: int
    written: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    gaps: list[MirrorGap] = Field(default_factory=list)


def top_name(working_dir: str) -> str:
    """The last component of WORKING_DIR: the folder every archive member lies in."""
    name = working_dir.rstrip("/\\").replace("\\", "/").rpartition("/")[2]
    if not name:
        raise TandemError("invalid", f"cannot mirror the server's root folder {working_dir!r}")
    return name


def mirror_scope(url: str, working_dir: str) -> str:
    """The folder name of the mirror of WORKING_DIR on the server at URL."""
    return hashlib.sha256(f"{url}\0{working_dir}".encode()).hexdigest()[:16]


class Mirror:
    """The mirror of SESSION's remote working dir (SCOPE: `mirror_scope`) under HOME."""

    def __init__(self, home: Path, session: str, scope: str = "default",
                 limits: Limits | None = None) -> None:
        if not isinstance(session, str) or not _SESSION.match(session) or ".." in session:
            raise TandemError("invalid", f"not a session id: {session!r}")
        if not re.fullmatch(r"[a-z0-9]{1,64}", scope):
            raise TandemError("invalid", f"not a mirror scope: {scope!r}")
        self.base = Path(home) / MIRRORS / session / scope
        self.root = self.base / "workspace"
        """The mirrored files (what the checkpointer sees as the workspace root)."""
        self.limits = limits or Limits()

    def ensure(self) -> Path:
        """Create the mirror's folders (private) and return its root."""
        return fsutil.private_dir(self.root)

    async def sync(self, client: AgentServerClient, working_dir: str) -> MirrorSync:
        """Make the mirror equal to the server's WORKING_DIR (absolute) now."""
        self.ensure()
        archive = self.base / "incoming.tar.gz"
        try:
            await client.archive_to(working_dir, archive, self.limits.max_archive_bytes,
                                    list(EXCLUDES))
            return await anyio.to_thread.run_sync(self._apply, archive, working_dir)
        finally:
            archive.unlink(missing_ok=True)

    def _apply(self, archive: Path, working_dir: str) -> MirrorSync:
        incoming = self.base / "incoming"
        shutil.rmtree(incoming, ignore_errors=True)
        os.mkdir(incoming, fsutil.PRIVATE_DIR_MODE)
        try:
            got = unpack_archive(archive, incoming, top_name(working_dir), self.limits)
            written, removed = reconcile(incoming, self.root, got)
        finally:
            shutil.rmtree(incoming, ignore_errors=True)
        gaps = [MirrorGap(path=p, reason="too-large",
                          detail=f"over {self.limits.file_cap} bytes: not downloaded")
                for p in got.too_large]
        gaps += [MirrorGap(path=p, reason="odd-name", detail="a control character in the "
                           "name: not mirrored") for p in got.odd_names]
        gaps += [MirrorGap(path=p, reason="excluded", detail="not mirrored")
                 for p in EXCLUDES]
        gaps.append(MirrorGap(path="", reason="not-archived",
                              detail="symbolic links and unreadable files on the server "
                              "are not in its archive"))
        return MirrorSync(root=str(self.root), working_dir=working_dir, files=len(got.files),
                          bytes=sum(got.files.values()), written=written, removed=removed,
                          gaps=gaps)


def _same(new: Path, old: Path) -> bool:
    """True when OLD is a regular file with NEW's bytes and execute bit."""
    try:
        a, b = new.lstat(), old.lstat()
    except FileNotFoundError:
        return False
    if not os.path.isfile(old) or old.is_symlink() or a.st_size != b.st_size:
        return False
    if (a.st_mode & 0o100) != (b.st_mode & 0o100):
        return False
    if a.st_blocks == 0 and a.st_size > 0:  # a placeholder: its size is all we know
        return b.st_blocks == 0
    return filecmp.cmp(new, old, shallow=False)


def _clear(path: Path) -> None:
    """Remove whatever is at PATH (a file, a link, a folder); nothing if absent."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def reconcile(incoming: Path, root: Path, got: Unpacked) -> tuple[list[str], list[str]]:
    """Make ROOT hold exactly what INCOMING (as unpacked into GOT) holds.

    Returns (written, removed) paths. Files move by rename (same file system),
    unchanged ones stay as they are.
    """
    written: list[str] = []
    for rel in sorted(got.dirs):
        target = root / rel
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            _clear(target)
        fsutil.private_dir(target)
    for rel in sorted(got.files):
        target = root / rel
        parent = target.parent
        if parent.is_symlink() or not parent.is_dir():  # a file where a folder now is
            _clear(parent)
            fsutil.private_dir(parent)
        if _same(incoming / rel, target):
            continue
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(incoming / rel, target)
        written.append(rel)
    removed: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        here = Path(dirpath)
        base = here.relative_to(root).as_posix()
        for name in filenames + [d for d in dirnames if (here / d).is_symlink()]:
            rel = name if base == "." else f"{base}/{name}"
            if rel not in got.files:
                (here / name).unlink()
                removed.append(rel)
        for name in dirnames:
            rel = name if base == "." else f"{base}/{name}"
            if rel not in got.dirs and (here / name).is_dir() and not (here / name).is_symlink():
                os.rmdir(here / name)  # emptied bottom-up above
    return written, sorted(removed)
