"""Fast session listing: read only the header line and the tail of each journal.

One ``pread`` of the first 16 KiB gives the header (and, for most sessions,
the whole file); one more ``pread`` near the end gives the last entry when
the file is larger. Nothing else of the journal is read, so listing
thousands of sessions costs a few syscalls each. The summary is a plain
dataclass: this loop is hot, and every value in it was checked on the way.

A journal whose header cannot be read is listed too, marked ``damaged`` (with
why), its id taken from the file name and its directory from the folder's
``.cwd`` marker; damaged rows come after every readable one, so "the latest
session" is never a damaged one.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tandem.store import fsutil, layout
from tandem.store.jsonl import loads_line

_HEAD = 16384  # one read covers header and tail of most sessions
_TAIL = 4096
# Our writer puts type, seq, ts first; anything else falls back to json.loads.
_PREFIX = re.compile(rb'^\{"type":"(?:[^"\\]|\\.)*","seq":(\d+),"ts":"([^"\\]*)"')


@dataclass(frozen=True, slots=True)
class SessionSummary:
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
    damaged: str | None = None
    """Why the journal cannot be opened (None for a sound one)."""

    def model_dump(self) -> dict[str, object]:
        """The summary as a JSON-ready dict (same name as pydantic's, on purpose)."""
        return asdict(self)


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


def _header(line: bytes) -> dict[str, Any] | None:
    try:
        h = loads_line(line)
    except ValueError:
        return None
    if not isinstance(h, dict) or h.get("type") != "header":
        return None
    title = h.setdefault("title", "")
    if not (
        isinstance(h.get("id"), str)
        and isinstance(h.get("cwd"), str)
        and isinstance(h.get("created"), str)
        and isinstance(title, str)
    ):
        return None
    prev = h.setdefault("previous_files", [])
    if not isinstance(prev, list) or any(not isinstance(p, str) for p in prev):
        return None
    return h


def _seq_ts(line: bytes) -> tuple[int, str] | None:
    m = _PREFIX.match(line)
    if m:
        return int(m.group(1)), m.group(2).decode()
    try:
        data = loads_line(line)
        seq = data["seq"]
        if data.get("type") == "header" or not isinstance(seq, int) or isinstance(seq, bool):
            return None
        return seq, str(data["ts"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return None  # a damaged tail: the header still lists


def _damaged(path: str, why: str, dir_exists: Any) -> SessionSummary | None:
    """The row of a journal whose header is unreadable (None: not a journal name)."""
    parsed = layout.parse_journal_name(os.path.basename(path))
    if parsed is None:
        return None
    compact, sid = parsed
    created = f"{compact[:4]}-{compact[4:6]}-{compact[6:8]}T{compact[9:11]}:{compact[11:13]}:" \
              f"{compact[13:15]}Z"
    try:
        with open(os.path.join(os.path.dirname(path), layout.CWD_MARKER), "rb") as f:
            cwd = f.read(4096).decode("utf-8", "replace")
    except OSError:
        cwd = ""
    return SessionSummary(id=sid, path=path, cwd=cwd, cwd_exists=bool(cwd and dir_exists(cwd)),
                          title="", created=created, last_activity=created, last_seq=0,
                          previous_files=[], damaged=why)


def summarize(path: Path | str, dir_exists: Any = os.path.isdir) -> SessionSummary | None:
    """The summary of the journal at PATH (marked ``damaged`` when its header is unreadable).

    None only when PATH cannot be opened at all.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        first = os.pread(fd, _HEAD, 0)
        # A short read is the whole file: no fstat needed for most sessions.
        size = len(first) if len(first) < _HEAD else os.fstat(fd).st_size
        nl = first.find(b"\n")
        while nl < 0 and len(first) < size:
            first += os.pread(fd, _HEAD, len(first))
            nl = first.find(b"\n")
        header = _header(first[:nl]) if nl >= 0 else None
        if header is None:
            why = "unreadable header" if nl >= 0 else "no complete header line"
            return _damaged(os.fspath(path), f"damaged: {why}; it cannot be opened", dir_exists)
        last = None
        if size > nl + 1:
            line = _last_line(fd, size, first)
            last = _seq_ts(line) if line is not None else None
    finally:
        os.close(fd)
    seq, ts = last if last else (0, header["created"])
    return SessionSummary(
        id=header["id"],
        path=os.fspath(path),
        cwd=header["cwd"],
        cwd_exists=bool(dir_exists(header["cwd"])),
        title=header["title"],
        created=header["created"],
        last_activity=ts,
        last_seq=seq,
        previous_files=header["previous_files"],
    )


CACHE_NAME = ".summaries.json"
"""Per project folder: journal name -> [size, mtime_ns, inode, summary fields]."""
_CACHED = ("id", "cwd", "title", "created", "last_activity", "last_seq", "previous_files",
           "damaged")


def _load_cache(folder: str) -> dict[str, list[Any]]:
    try:
        with open(os.path.join(folder, CACHE_NAME), "rb") as f:
            data = json.loads(f.read())
    except (OSError, ValueError):
        return {}  # missing or torn: rebuilt from the journals
    return data if isinstance(data, dict) else {}


def _save_cache(folder: str, cache: dict[str, list[Any]]) -> None:
    # A cache, so no fsync: a torn or lost file is detected and rebuilt.
    tmp = os.path.join(folder, f".{CACHE_NAME}.{os.getpid()}.tmp")
    try:
        with fsutil.create_private(tmp, text=True) as f:
            json.dump(cache, f, separators=(",", ":"))
        os.replace(tmp, os.path.join(folder, CACHE_NAME))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _folder_summaries(folder: str, exists: Any) -> list[SessionSummary]:
    """Summaries of FOLDER's journals, from its cache where a journal is unchanged.

    A journal counts as unchanged when its size, mtime and inode are those
    recorded: an append changes the size, a header rewrite the inode. This
    loop runs once per session in a listing, so it stays plain.
    """
    cache = _load_cache(folder)
    fresh: dict[str, list[Any]] = {}
    out: list[SessionSummary] = []
    changed = False
    for name, path in layout.journal_entries(folder):
        try:
            st = os.stat(path)
        except OSError:
            continue
        hit = cache.get(name)
        if (isinstance(hit, list) and len(hit) == 4 and hit[0] == st.st_size
                and hit[1] == st.st_mtime_ns and hit[2] == st.st_ino
                and isinstance(hit[3], list) and len(hit[3]) == len(_CACHED)):
            f = hit[3]
            out.append(SessionSummary(f[0], path, f[1], bool(f[1] and exists(f[1])), f[2], f[3],
                                      f[4], f[5], f[6], f[7]))
            fresh[name] = hit
            continue
        summary = summarize(path, exists)
        changed = True
        if summary is None:
            continue
        fresh[name] = [st.st_size, st.st_mtime_ns, st.st_ino,
                       [getattr(summary, k) for k in _CACHED]]
        out.append(summary)
    if changed or len(fresh) != len(cache):
        _save_cache(folder, fresh)
    return out


def list_sessions(home: Path, cwd: str | None = None) -> list[SessionSummary]:
    """Sessions of CWD (or of every project when None), most recent activity first."""
    folders = [layout.slug_dir(home, cwd)] if cwd is not None else layout.slug_dirs(home)
    known: dict[str, bool] = {}

    def exists(d: str) -> bool:  # one stat per project, not per session
        if d not in known:
            known[d] = os.path.isdir(d)
        return known[d]

    out: list[SessionSummary] = []
    for folder in folders:
        out.extend(_folder_summaries(os.fspath(folder), exists))
    out.sort(key=lambda s: (s.damaged is None, s.last_activity, s.created), reverse=True)
    return out
