"""A private mirror of a remote working dir, for checkpoints and Rewind.

``$TANDEM_HOME/remote-mirrors/<session>/<scope>/``, SCOPE naming the server
and working dir (`mirror_scope`: a session attached elsewhere later gets a
mirror, and a checkpoint store, of its own, so a Rewind never pushes one
working dir's files into another):

| path | what |
| --- | --- |
| `workspace/` | the mirror: the root the checkpointer snapshots and restores |
| `incoming/`, `incoming.tar.gz` | one sync's downloads or archive (removed after) |
| `hashes.json` | each mirror file's sha1 and the stat it was computed at |
| `push.json` | a Rewind's files not yet put back on the server (see `remote.push`) |

`Mirror.sync` lists the working dir on the server with each file's sha1
(`tandem.remote.listing`, one bash call), compares the hashes with the
mirror's, and downloads only the files that differ into `incoming/`; a
rename is copied locally, a mode change is a chmod. `Mirror.sync_archive`
(a server that cannot list, or many changes in a git work tree) downloads
the ``tar.gz`` archive and unpacks it safely (`tandem.remote.unpack`: the
archive is untrusted). Either way `workspace/` is then equal to the server:
changed files are renamed into place, unchanged ones are left (their stat
data keeps the checkpointer's index fast), files and folders gone on the
server are removed. A sync a
crash interrupted leaves a mirror the next sync repairs; nothing snapshots a
mirror between the two (sync and snapshot run in one call). The mirror is
never inside the project and never holds a key.
"""

from __future__ import annotations

import contextlib
import filecmp
import hashlib
import json
import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio.to_thread
from pydantic import BaseModel, Field

from tandem.protocol.base import TandemError
from tandem.remote import listing
from tandem.remote.client import AgentServerClient
from tandem.remote.errors import RemoteError
from tandem.remote.unpack import Limits, Unpacked, unpack_archive
from tandem.store import fsutil

MIRRORS = "remote-mirrors"
EXCLUDES = (".git/", "node_modules/", ".venv/", "venv/", "__pycache__/", ".mypy_cache/",
            ".pytest_cache/", ".ruff_cache/", "*.pyc")
"""Never mirrored: git's own store and bulky generated folders (named in every patch)."""

MAX_FETCH_FILES = 64
MAX_FETCH_BYTES = 32 << 20
"""Past these many changed files or bytes, one archive beats a download per file (used
for a working dir that is a git work tree: the archive of another may be of a repository
below it)."""
DOWNLOADS = 8
"""Files one sync downloads at once."""
HASHES = "hashes.json"
"""Next to the mirror: each mirror file's sha1 and the stat it was computed at."""

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
        """Make the mirror equal to the server's WORKING_DIR (absolute) now.

        Lists the working dir on the server (`tandem.remote.listing`) and
        downloads only the files whose content differs from the mirror's; the
        whole archive when the server cannot list or many files changed.
        """
        self.ensure()
        top = top_name(working_dir)
        try:
            code, output = await client.execute_bash(
                listing.script(EXCLUDES, self.limits.file_cap), working_dir)
        except RemoteError as e:
            # No bash endpoint, or one kept to another folder (422): the archive may serve.
            if e.status not in (403, 404, 405, 422, 501):
                raise
            code, output = -1, ""
        data = listing.decode(output) if code == 0 else None
        got = listing.parse(data, top, self.limits) if data is not None else None
        if got is None:
            return await self.sync_archive(client, working_dir)
        plan = await anyio.to_thread.run_sync(self._plan, got)
        if not (plan.fetch or plan.copies or plan.placeholders):  # the usual turn: one hop
            return await anyio.to_thread.run_sync(
                self._apply_listing, got, plan, self.base / "incoming", set(), working_dir)
        if got.git and (len(plan.fetch) > MAX_FETCH_FILES
                        or sum(got.files[r][1] for r in plan.fetch) > MAX_FETCH_BYTES):
            return await self.sync_archive(client, working_dir)
        incoming = self.base / "incoming"
        await anyio.to_thread.run_sync(self._fresh, incoming)
        try:
            try:
                gone = await self._download(client, working_dir, plan.fetch, incoming)
            except RemoteError as e:
                if e.code != "remote-invalid":  # a file grown over the cap since the listing
                    raise
                return await self.sync_archive(client, working_dir)
            return await anyio.to_thread.run_sync(
                self._apply_listing, got, plan, incoming, gone, working_dir)
        finally:
            await anyio.to_thread.run_sync(
                lambda: shutil.rmtree(incoming, ignore_errors=True))

    async def sync_archive(self, client: AgentServerClient, working_dir: str) -> MirrorSync:
        """Make the mirror equal to the server's WORKING_DIR from its whole ``tar.gz`` archive."""
        self.ensure()
        archive = self.base / "incoming.tar.gz"
        try:
            await client.archive_to(working_dir, archive, self.limits.max_archive_bytes,
                                    list(EXCLUDES))
            return await anyio.to_thread.run_sync(self._apply, archive, working_dir)
        finally:
            archive.unlink(missing_ok=True)

    # -- the incremental sync ---------------------------------------------------

    def _fresh(self, incoming: Path) -> None:
        shutil.rmtree(incoming, ignore_errors=True)
        os.mkdir(incoming, fsutil.PRIVATE_DIR_MODE)

    def _plan(self, got: listing.Listing) -> _Plan:
        """Which of GOT's files the mirror lacks (by content hash), and the mode fixes."""
        cache = _load_hashes(self.base / HASHES)
        plan = _Plan(cached=cache)
        for rel, (mode, size) in got.files.items():
            target = self.root / rel
            try:
                st = target.lstat()
            except (FileNotFoundError, NotADirectoryError):
                st = None
            regular = st is not None and stat.S_ISREG(st.st_mode)
            if size > self.limits.file_cap:  # a placeholder of its size, as the archive's
                if not (regular and st is not None and st.st_size == size
                        and st.st_blocks == 0):
                    plan.placeholders.append(rel)
                continue
            digest = got.hashes.get(rel)
            if digest is None:
                continue  # unreadable on the server: not mirrored (the archive skips it)
            local = _hash_of(target, st, cache.get(rel)) if regular and st else None
            if local is None or local[0] != digest:
                plan.fetch.append(rel)
                continue
            plan.hashes[rel] = local
            assert st is not None
            if bool(mode & 0o111) != bool(st.st_mode & 0o100):
                plan.chmod.append(rel)
        # A renamed or copied file: its bytes are in the mirror already, under another name.
        known = {h: rel for rel, (h, _) in plan.hashes.items()}
        for rel, (h, key) in cache.items():
            if rel not in got.files and h not in known:
                with contextlib.suppress(OSError):
                    if _key((self.root / rel).lstat()) == key:
                        known[h] = rel
        for rel in list(plan.fetch):
            source = known.get(got.hashes[rel])
            if source is not None:
                plan.fetch.remove(rel)
                plan.copies[rel] = source
        return plan

    async def _download(self, client: AgentServerClient, working_dir: str,
                        paths: list[str], incoming: Path) -> set[str]:
        """Fetch PATHS into INCOMING (as ``0``, ``1``, …); the ones gone from the server."""
        gone: set[str] = set()
        limit = anyio.Semaphore(DOWNLOADS)
        wd = working_dir.rstrip("/")

        async def one(n: int, rel: str) -> None:
            async with limit:
                try:
                    await client.download_to(f"{wd}/{rel}", incoming / str(n),
                                             max_bytes=self.limits.file_cap, durable=False)
                except RemoteError as e:
                    if e.status != 404:
                        raise
                    gone.add(rel)  # deleted since the listing: the next sync sees it

        async with anyio.create_task_group() as tg:
            for n, rel in enumerate(paths):
                tg.start_soon(one, n, rel)
        return gone

    def _apply_listing(self, got: listing.Listing, plan: _Plan, incoming: Path,
                       gone: set[str], working_dir: str) -> MirrorSync:
        """Make the mirror hold exactly GOT, moving PLAN's downloads into place."""
        keep = {r for r in got.files if r in got.hashes or got.files[r][1] > self.limits.file_cap}
        keep -= gone
        written: list[str] = []
        moves = {rel: incoming / str(n) for n, rel in enumerate(plan.fetch) if rel not in gone}
        # Copied before anything moves: a source may be replaced or removed below.
        for n, (rel, source) in enumerate(sorted(plan.copies.items())):
            moves[rel] = incoming / f"copy-{n}"
            shutil.copyfile(self.root / source, moves[rel], follow_symlinks=False)
        for rel in sorted(got.dirs):
            target = self.root / rel
            if target.is_symlink() or (target.exists() and not target.is_dir()):
                _clear(target)
            fsutil.private_dir(target)
        for rel in sorted(moves) + sorted(plan.placeholders):
            target = self.root / rel
            parent = target.parent
            if parent.is_symlink() or not parent.is_dir():
                _clear(parent)
                fsutil.private_dir(parent)
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            mode = 0o700 if got.files[rel][0] & 0o111 else 0o600
            if rel in moves:
                os.chmod(moves[rel], mode)
                os.replace(moves[rel], target)
                st = target.lstat()
                plan.hashes[rel] = (_sha1(target), _key(st))
            else:
                tmp = incoming / f"placeholder-{len(written)}"
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
                with os.fdopen(fd, "wb") as f:
                    f.truncate(got.files[rel][1])
                os.replace(tmp, target)
            written.append(rel)
        for rel in plan.chmod:
            target = self.root / rel
            os.chmod(target, 0o700 if got.files[rel][0] & 0o111 else 0o600)
            plan.hashes[rel] = (plan.hashes[rel][0], _key(target.lstat()))
            written.append(rel)
        removed = _remove_others(self.root, keep, got.dirs)
        hashes = {r: h for r, h in plan.hashes.items() if r in keep}
        if hashes != plan.cached:
            _save_hashes(self.base / HASHES, hashes)
        too_large = sorted(r for r in keep if got.files[r][1] > self.limits.file_cap)
        return self._result(working_dir, {r: got.files[r][1] for r in keep}, sorted(written),
                            removed, too_large, got.odd_names)

    def _apply(self, archive: Path, working_dir: str) -> MirrorSync:
        incoming = self.base / "incoming"
        self._fresh(incoming)
        try:
            got = unpack_archive(archive, incoming, top_name(working_dir), self.limits)
            written, removed = reconcile(incoming, self.root, got)
        finally:
            shutil.rmtree(incoming, ignore_errors=True)
        # The next listing compares against these (every file may have moved).
        hashes = {}
        for rel in got.files:
            if rel not in got.too_large:
                st = (self.root / rel).lstat()
                hashes[rel] = (_sha1(self.root / rel), _key(st))
        _save_hashes(self.base / HASHES, hashes)
        return self._result(working_dir, got.files, written, removed, got.too_large,
                            got.odd_names)

    def _result(self, working_dir: str, files: dict[str, int], written: list[str],
                removed: list[str], too_large: list[str], odd_names: list[str]) -> MirrorSync:
        gaps = [MirrorGap(path=p, reason="too-large",
                          detail=f"over {self.limits.file_cap} bytes: not downloaded")
                for p in too_large]
        gaps += [MirrorGap(path=p, reason="odd-name", detail="a control character in the "
                           "name: not mirrored") for p in odd_names]
        gaps += [MirrorGap(path=p, reason="excluded", detail="not mirrored")
                 for p in EXCLUDES]
        gaps.append(MirrorGap(path="", reason="not-archived",
                              detail="symbolic links and unreadable files on the server "
                              "are not in its archive"))
        return MirrorSync(root=str(self.root), working_dir=working_dir, files=len(files),
                          bytes=sum(files.values()), written=written, removed=removed,
                          gaps=gaps)


@dataclass
class _Plan:
    """What an incremental sync does: downloads, placeholders, mode fixes, known hashes."""

    fetch: list[str] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)
    chmod: list[str] = field(default_factory=list)
    copies: dict[str, str] = field(default_factory=dict)
    """Path → the mirror file holding its bytes already (a rename on the server)."""
    hashes: dict[str, tuple[str, list[int]]] = field(default_factory=dict)
    """Path → (sha1, the stat key it was computed at) of mirror files equal to the server's."""
    cached: dict[str, tuple[str, list[int]]] = field(default_factory=dict)
    """What ``hashes.json`` held before (not rewritten when nothing changed)."""


def _key(st: os.stat_result) -> list[int]:
    """What says a mirror file is unchanged since it was hashed (a rename changes the inode)."""
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode]


def _sha1(path: Path) -> str:
    h = hashlib.sha1(usedforsecurity=False)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _hash_of(path: Path, st: os.stat_result, cached: tuple[str, list[int]] | None
             ) -> tuple[str, list[int]] | None:
    """(sha1, stat key) of the mirror file PATH, from CACHED when its stat is unchanged."""
    key = _key(st)
    if cached is not None and cached[1] == key:
        return cached
    try:
        return _sha1(path), key
    except OSError:
        return None


def _load_hashes(path: Path) -> dict[str, tuple[str, list[int]]]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): (str(v[0]), [int(x) for x in v[1]]) for k, v in raw.items()}
    except (OSError, ValueError, TypeError, IndexError, AttributeError):
        return {}  # no cache, or a damaged one: the files are hashed again


def _save_hashes(path: Path, hashes: dict[str, tuple[str, list[int]]]) -> None:
    fsutil.atomic_write(path, json.dumps({k: [v[0], v[1]] for k, v in hashes.items()}).encode())


def _remove_others(root: Path, files: set[str], dirs: set[str]) -> list[str]:
    """Remove what ROOT holds beyond FILES and DIRS (links too); the removed files' paths."""
    removed: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        here = Path(dirpath)
        base = here.relative_to(root).as_posix()
        for name in filenames + [d for d in dirnames if (here / d).is_symlink()]:
            rel = name if base == "." else f"{base}/{name}"
            if rel not in files:
                (here / name).unlink()
                removed.append(rel)
        for name in dirnames:
            rel = name if base == "." else f"{base}/{name}"
            if rel not in dirs and (here / name).is_dir() and not (here / name).is_symlink():
                os.rmdir(here / name)  # emptied bottom-up above
    return sorted(removed)


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
    return written, _remove_others(root, set(got.files), got.dirs)
