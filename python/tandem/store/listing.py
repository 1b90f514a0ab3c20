"""Fast session listing: read only the header line and the tail of each journal.

One ``pread`` of the first 4 KiB gives the header (and the whole file when it
is small); one more ``pread`` near the end gives the last entry. Nothing else
of the journal is read, so listing thousands of sessions stays cheap.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ValidationError

from tandem.store import layout
from tandem.store.models import Header

_HEAD = 4096
_TAIL = 4096


class SessionSummary(BaseModel):
    """What a session list shows about one journal."""

    id: str
    path: str
    cwd: str
    cwd_exists: bool
    title: str
    created: str
    last_activity: str
    """Timestamp of the last entry (the creation time for an empty session)."""
    last_seq: int
    previous_files: list[str]


def _last_line(fd: int, size: int, first: bytes) -> bytes | None:
    """The last newline-terminated line of the file (a torn tail is not a line)."""
    if size <= len(first):
        base, data = 0, first[:size]
    else:
        base = max(0, size - _TAIL)
        data = os.pread(fd, size - base, base)
    while True:
        end = data.rfind(b"\n")
        start = data.rfind(b"\n", 0, end) if end > 0 else -1
        if start >= 0 or base == 0:
            return None if end < 0 else data[start + 1 : end]
        # The last line is longer than the window: double it.
        grow = min(base, len(data))
        base -= grow
        data = os.pread(fd, grow, base) + data


def summarize(path: Path) -> SessionSummary | None:
    """The summary of the journal at PATH, or None if it is not readable as one."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        first = os.pread(fd, _HEAD, 0)
        nl = first.find(b"\n")
        while nl < 0 and len(first) < size:
            first += os.pread(fd, _HEAD, len(first))
            nl = first.find(b"\n")
        if nl < 0:
            return None
        try:
            header = Header.model_validate_json(first[:nl])
        except ValidationError:
            return None
        last_seq, last_ts = 0, header.created
        line = _last_line(fd, size, first) if size > nl + 1 else None
        if line is not None:
            try:
                data = json.loads(line)
                if data.get("type") != "header":
                    last_seq = int(data.get("seq", 0))
                    last_ts = str(data.get("ts") or last_ts)
            except (ValueError, TypeError, AttributeError):
                pass  # a torn or damaged tail: the header still lists
    finally:
        os.close(fd)
    return SessionSummary(
        id=header.id,
        path=str(path),
        cwd=header.cwd,
        cwd_exists=os.path.isdir(header.cwd),
        title=header.title,
        created=header.created,
        last_activity=last_ts,
        last_seq=last_seq,
        previous_files=header.previous_files,
    )


def list_sessions(home: Path, cwd: str | None = None) -> list[SessionSummary]:
    """Sessions of CWD (or of every project when None), most recent activity first."""
    if cwd is not None:
        folders = [layout.slug_dir(home, cwd)]
    else:
        folders = layout.slug_dirs(home)
    out: list[SessionSummary] = []
    for folder in folders:
        for path in layout.iter_journals(folder):
            summary = summarize(path)
            if summary is not None:
                out.append(summary)
    out.sort(key=lambda s: (s.last_activity, s.created), reverse=True)
    return out
