"""Parallel sessions' records: ``$TANDEM_HOME/parallel/<session>.json``, one per session.

A record says what tandem made (tree, branch, base) so that landing and
removal touch only that; it outlives the tree (``removed``), as the session's
journal does.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from tandem.protocol.base import TandemError
from tandem.protocol.parallel import ParallelRecord
from tandem.store.fsutil import atomic_write


def folder(home: Path) -> Path:
    """Where the records live."""
    return home / "parallel"


def path_of(home: Path, session: str) -> Path:
    """The record file of SESSION."""
    if not session or "/" in session or session.startswith("."):
        raise TandemError("invalid", f"not a session id: {session!r}")
    return folder(home) / f"{session}.json"


def write(home: Path, record: ParallelRecord) -> None:
    """Write RECORD (temp file, fsync, rename)."""
    folder(home).mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(path_of(home, record.session), record.model_dump_json(indent=1).encode())


def read(home: Path, session: str) -> ParallelRecord | None:
    """SESSION's record, or None when it is no parallel session (or the file is damaged)."""
    try:
        return ParallelRecord.model_validate_json(path_of(home, session).read_bytes())
    except (OSError, ValidationError):
        return None


def get(home: Path, session: str) -> ParallelRecord:
    """SESSION's record, or ``not-found``."""
    record = read(home, session)
    if record is None:
        raise TandemError("not-found", f"Session {session} is not a parallel session")
    return record


def every(home: Path) -> list[ParallelRecord]:
    """Every record, newest first."""
    found = []
    try:
        files = sorted(folder(home).glob("*.json"))
    except OSError:
        return []
    for f in files:
        record = read(home, f.stem)
        if record is not None:
            found.append(record)
    return sorted(found, key=lambda r: r.created, reverse=True)
