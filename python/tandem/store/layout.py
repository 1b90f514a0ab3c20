"""Where journals live: ``sessions/<cwd-slug>/<created>_<id>.jsonl``.

The slug is a readable basename plus a hash of the canonical cwd, so ``a-b``
and ``a/b`` (which Claude Code's ``/``→``-`` encoding merges) get different
folders. Each slug folder also records its full cwd in a ``.cwd`` file; on the
(astronomically unlikely) hash collision the next free suffix is used, so two
directories never share a folder.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from tandem.paths import sessions_dir
from tandem.store import fsutil

CWD_MARKER = ".cwd"
JOURNAL_SUFFIX = ".jsonl"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_NAME_RE = re.compile(
    r"^(?P<created>\d{8}T\d{6}Z)_(?P<id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$"
)


def canonical_cwd(cwd: str | os.PathLike[str]) -> str:
    """The absolute, symlink-resolved form of CWD (works for missing directories)."""
    text = os.fspath(cwd)
    if not text or "\0" in text:
        raise ValueError(f"not a usable directory path: {text!r}")
    return str(Path(text).expanduser().resolve(strict=False))


def base_slug(cwd: str) -> str:
    """Readable basename + 16 hex digits of SHA-256 of the canonical CWD."""
    canon = canonical_cwd(cwd)
    name = _UNSAFE.sub("_", os.path.basename(canon) or "root").strip("._") or "root"
    digest = hashlib.sha256(canon.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{name[:40]}-{digest}"


def slug_dir(home: Path, cwd: str, create: bool = False) -> Path:
    """The folder of CWD's journals under HOME; with CREATE, make and claim it."""
    canon = canonical_cwd(cwd)
    root = sessions_dir(home)
    base = base_slug(canon)
    for n in range(1, 1000):
        candidate = root / (base if n == 1 else f"{base}-{n}")
        marker = candidate / CWD_MARKER
        try:
            owner = marker.read_text(encoding="utf-8")
        except FileNotFoundError:
            if not create:
                return candidate
            # A folder without marker is an interrupted creation: claim it.
            fsutil.private_dir(candidate)
            fsutil.atomic_write(marker, canon.encode("utf-8", "surrogateescape"))
            fsutil.fsync_dir(root)  # the new folder itself must survive a crash
            return candidate
        if owner == canon:
            return candidate
    raise RuntimeError(f"no free session folder for {canon}")


def journal_name(created: str, session_id: str) -> str:
    """File name of a journal: compact UTC creation time, underscore, id."""
    return f"{compact_time(created)}_{session_id}{JOURNAL_SUFFIX}"


def compact_time(iso: str) -> str:
    """``2026-11-30T04:37:16.123Z`` → ``20261130T043716Z`` (sortable, filename-safe)."""
    digits = re.sub(r"[^0-9]", "", iso)
    if len(digits) < 14:
        raise ValueError(f"not an ISO timestamp: {iso!r}")
    return f"{digits[:8]}T{digits[8:14]}Z"


def parse_journal_name(name: str) -> tuple[str, str] | None:
    """(compact created, id) from a journal file name, or None if it is not one."""
    match = _NAME_RE.match(name)
    if not match:
        return None
    return match.group("created"), match.group("id")


def artifacts_dir(journal: Path) -> Path:
    """The artifact folder of JOURNAL: same stem, beside it."""
    return journal.with_suffix("")


REWIND_INTENT_NAME = "rewind-intent.json"
"""The file a rewind writes first in the journal's artifact folder (crash recovery)."""


def rewind_intent_path(journal: Path) -> Path:
    """Where the rewind intent of JOURNAL is kept (it exists only while one is unsettled)."""
    return artifacts_dir(journal) / REWIND_INTENT_NAME


def lock_path(journal: Path) -> Path:
    """The lock file of JOURNAL: same stem, ``.lock``."""
    return journal.with_suffix(".lock")


def iter_journals(folder: Path) -> list[Path]:
    """Journal files directly in FOLDER (unsorted; empty if FOLDER is missing)."""
    try:
        with os.scandir(folder) as it:
            return [Path(e.path) for e in it if parse_journal_name(e.name) and e.is_file()]
    except (FileNotFoundError, NotADirectoryError):
        return []


def iter_journal_paths(folder: Path) -> list[str]:
    """Like `iter_journals` but plain strings, for the listing's hot loop."""
    try:
        with os.scandir(folder) as it:
            return [
                e.path for e in it if e.name.endswith(JOURNAL_SUFFIX) and _NAME_RE.match(e.name)
            ]
    except (FileNotFoundError, NotADirectoryError):
        return []


def journal_entries(folder: str) -> list[tuple[str, str]]:
    """(name, path) of every journal in FOLDER, for the listing's hot loop."""
    try:
        with os.scandir(folder) as it:
            return [(e.name, e.path) for e in it
                    if e.name.endswith(JOURNAL_SUFFIX) and _NAME_RE.match(e.name)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def slug_dirs(home: Path) -> list[Path]:
    """Every slug folder under HOME's sessions folder."""
    try:
        with os.scandir(sessions_dir(home)) as it:
            return [Path(e.path) for e in it if e.is_dir()]
    except FileNotFoundError:
        return []
