"""A session journal: one JSON Lines file, appended one whole line per write.

Usage::

    j = Journal.create(home, cwd, title="fix the parser")
    j.append({"type": "user", "turn": 1, "text": "hi"})   # -> User(seq=1, ts=…)
    j.sync()                                               # at the end of a turn
    for e in j.entries(): ...
    j.close()

    j = Journal.open(path)            # writable if nobody else holds it
    j.writable, j.notices             # read-only reason, torn-line report…

Crash model: an entry is one ``write`` of one line, so a crash leaves at most
one torn (newline-less) tail. `open` copies that tail into the artifact folder,
cuts it off, and says so in ``notices``; every complete line survives.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tandem.protocol.base import TandemError
from tandem.store import fsutil, layout
from tandem.store.ids import uuid7
from tandem.store.lock import JournalLock, LockHeld
from tandem.store.models import Entry, EntryError, Header, entry_to_dict, parse_entry

_TAIL_CHUNK = 8192


def now_iso() -> str:
    """Current UTC time, ISO 8601 with milliseconds and ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dumps(data: dict[str, Any]) -> bytes:
    # json escapes newlines inside strings, so the result is exactly one line;
    # U+2028/U+2029 are escaped too, for readers that split on every line break.
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return (text + "\n").encode("utf-8")


def read_header(path: Path) -> tuple[Header, int]:
    """Parse the header line of the journal at PATH; also return its byte length."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise TandemError("not-found", f"No session journal at {path}") from None
    except OSError as exc:
        raise TandemError("io", f"Cannot read {path}: {exc.strerror}") from None
    try:
        buf = b""
        while b"\n" not in buf:
            chunk = os.pread(fd, 65536, len(buf))
            if not chunk:
                break
            buf += chunk
    finally:
        os.close(fd)
    line, nl, _ = buf.partition(b"\n")
    if not nl:
        raise TandemError("corrupt", f"{path} has no complete header line")
    try:
        header = Header.model_validate_json(line)
    except ValidationError as exc:
        raise TandemError("corrupt", f"{path}: invalid header: {exc.errors()[0]['msg']}") from None
    return header, len(line) + 1


def _last_complete_line(fd: int, start: int, end: int) -> bytes | None:
    """The last newline-terminated line in [START, END) of FD, without its newline."""
    if end <= start:
        return None
    pos, buf = end, b""  # byte END-1 is a newline by construction
    while pos > start:
        step = min(_TAIL_CHUNK, pos - start)
        pos -= step
        buf = os.pread(fd, step, pos) + buf
        cut = buf.rfind(b"\n", 0, len(buf) - 1)
        if cut >= 0:
            return buf[cut + 1 : -1]
    return buf[:-1]


def _find_end(fd: int, start: int, size: int) -> int:
    """Offset just past the last newline at or after START (START if none)."""
    pos = size
    while pos > start:
        step = min(_TAIL_CHUNK, pos - start)
        chunk = os.pread(fd, step, pos - step)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return pos - step + cut + 1
        pos -= step
    return start


def rewrite_header_file(path: Path, header: Header, replace: Any = os.replace) -> None:
    """Rewrite the header of the journal at PATH; entry lines are copied byte for byte.

    Write-temp, fsync, rename (REPLACE is the rename, a seam for fault tests),
    fsync the folder. On failure the journal is exactly as it was.
    """
    _, header_len = read_header(path)
    tmp = path.with_name(f".{path.name}.hdr-{os.getpid()}")
    try:
        with open(path, "rb") as src, open(tmp, "wb") as dst:
            dst.write(_dumps(header.model_dump(mode="json")))
            src.seek(header_len)
            while chunk := src.read(1 << 20):
                dst.write(chunk)
            dst.flush()
            os.fsync(dst.fileno())
        replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsutil.fsync_dir(path.parent)


class Journal:
    """An open session journal (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        header: Header,
        header_len: int,
        lock: JournalLock | None,
        read_only_reason: str | None,
        notices: list[str],
    ) -> None:
        self.path = path
        self.header = header
        self._header_len = header_len
        self._lock = lock
        self.read_only_reason = read_only_reason
        """Why this journal is read-only (None when writable)."""
        self.notices = notices
        """Things the user should be told (torn tail set aside, read-only…)."""
        self._fd: int | None = None
        self._end = header_len
        self.last_seq = 0
        """Seq of the last complete entry (0 when empty)."""
        self.last_ts: str | None = None
        """Timestamp of the last complete entry."""

    # -- opening ---------------------------------------------------------

    @classmethod
    def create(
        cls, home: Path, cwd: str, title: str = "", session_id: str | None = None
    ) -> Journal:
        """Create a new empty session for CWD under HOME and open it for writing."""
        if not isinstance(title, str):
            raise TandemError("invalid", "title must be a string")
        if "\n" in title or len(title) > 500:
            raise TandemError("invalid", "title must be one line of at most 500 characters")
        try:
            canon = layout.canonical_cwd(cwd)
        except ValueError as exc:
            raise TandemError("invalid", str(exc)) from None
        sid = session_id or uuid7()
        created = now_iso()
        header = Header(id=sid, cwd=canon, created=created, title=title)
        folder = layout.slug_dir(home, canon, create=True)
        path = folder / layout.journal_name(created, sid)
        lock = JournalLock.acquire(layout.lock_path(path))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, _dumps(header.model_dump(mode="json")))
                os.fsync(fd)
            finally:
                os.close(fd)
            fsutil.fsync_dir(folder)
        except BaseException:
            lock.release()
            raise
        return cls.open(path, writable=True, lock=lock)

    @classmethod
    def open(
        cls, path: Path | str, writable: bool = True, lock: JournalLock | None = None
    ) -> Journal:
        """Open the journal at PATH.

        With WRITABLE, take its lock; if a live process holds it, open
        read-only and say why in ``read_only_reason`` and ``notices``. LOCK is
        an already acquired lock (after a relocation). A torn last line is set
        aside (writable) or ignored (read-only), and reported.
        """
        path = Path(path)
        if path.suffix != layout.JOURNAL_SUFFIX:
            raise TandemError("invalid", f"Not a session journal (.jsonl): {path}")
        header, header_len = read_header(path)
        reason = None
        notices: list[str] = []
        if writable and lock is None:
            try:
                lock = JournalLock.acquire(layout.lock_path(path))
            except LockHeld as held:
                reason = (
                    f"Session {header.id} is in use by {held.holder.describe()}; opened read-only."
                )
                notices.append(reason)
        elif not writable:
            reason = "opened read-only on request"
        journal = cls(path, header, header_len, lock, reason, notices)
        try:
            journal._scan()
        except BaseException:
            journal.close()
            raise
        return journal

    def _scan(self) -> None:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            end = _find_end(fd, self._header_len, size)
            if end < size:
                torn = os.pread(fd, size - end, end)
                self._set_aside(torn, end)
            self._end = end
            self._read_tail(fd)
        finally:
            os.close(fd)
        if self.writable:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def _read_tail(self, fd: int) -> None:
        end = self._end
        while end > self._header_len:
            line = _last_complete_line(fd, self._header_len, end)
            if line is None:
                break
            try:
                data = json.loads(line)
                self.last_seq = int(data["seq"])
                self.last_ts = str(data.get("ts"))
                return
            except (ValueError, KeyError, TypeError):
                end -= len(line) + 1  # an unreadable line: look one further back

    def _set_aside(self, torn: bytes, offset: int) -> None:
        where = f"{len(torn)} bytes at offset {offset}"
        if not self.writable:
            self.notices.append(
                f"Session {self.header.id}: the last line is incomplete ({where}); "
                "it is ignored here and will be set aside when the session is opened for writing."
            )
            return
        folder = layout.artifacts_dir(self.path)
        folder.mkdir(exist_ok=True)
        aside = folder / f"torn-{layout.compact_time(now_iso())}-{offset}.part"
        fsutil.atomic_write(aside, torn)
        fd = os.open(self.path, os.O_WRONLY)
        try:
            os.ftruncate(fd, offset)
            os.fsync(fd)
        finally:
            os.close(fd)
        self.notices.append(
            f"Session {self.header.id}: an incomplete last line ({where}, left by a crash "
            f"mid-write) was set aside in {aside}; every complete entry is intact."
        )

    # -- properties ----------------------------------------------------------

    @property
    def id(self) -> str:
        """The session id."""
        return self.header.id

    @property
    def writable(self) -> bool:
        """True when this process holds the journal's lock."""
        return self._lock is not None and self._lock.held

    @property
    def artifacts_dir(self) -> Path:
        """The artifact folder of this session (created on demand by its users)."""
        return layout.artifacts_dir(self.path)

    # -- writing ---------------------------------------------------------------

    def _require_writable(self) -> int:
        if self._fd is None or not self.writable:
            reason = self.read_only_reason or "the journal is closed"
            raise TandemError("read-only", f"Cannot write session {self.id}: {reason}")
        return self._fd

    def append(self, entry: dict[str, Any] | Entry) -> Entry:
        """Append ENTRY (dict or model) as one line; assign ``seq`` and ``ts``; return it.

        The write is a single ``write`` call; if it fails or is short the file
        is cut back to where it was, so no partial line stays behind.
        """
        fd = self._require_writable()
        if isinstance(entry, Entry):
            data = entry_to_dict(entry)
        elif isinstance(entry, dict):
            data = dict(entry)
        else:
            raise TandemError("invalid", f"an entry must be a dict or Entry, not {type(entry)}")
        data["seq"] = self.last_seq + 1
        data["ts"] = now_iso()
        try:
            model = parse_entry(data)
        except EntryError as exc:
            raise TandemError("invalid", str(exc)) from None
        line = _dumps(entry_to_dict(model))
        try:
            written = os.write(fd, line)
        except OSError as exc:
            self._cut_back()
            raise TandemError("io", f"Cannot append to {self.path}: {exc.strerror}") from None
        if written != len(line):
            self._cut_back()
            raise TandemError("io", f"Short write appending to {self.path}; entry not saved")
        self._end += len(line)
        self.last_seq = model.seq
        self.last_ts = model.ts
        return model

    def _cut_back(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, self._end)

    def sync(self) -> None:
        """fsync the journal: call at the end of each turn."""
        fd = self._require_writable()
        os.fsync(fd)

    def update_header(self, **changes: Any) -> Header:
        """Rewrite the header with CHANGES (e.g. ``title=…``) via temp+fsync+rename."""
        self._require_writable()
        if "id" in changes or "type" in changes:
            raise TandemError("invalid", "the session id and type cannot change")
        try:
            header = Header.model_validate({**self.header.model_dump(), **changes})
        except ValidationError as exc:
            msg = exc.errors()[0]["msg"]
            raise TandemError("invalid", f"invalid header change: {msg}") from None
        os.fsync(self._require_writable())
        rewrite_header_file(self.path, header)
        old_fd, self._fd = self._fd, os.open(self.path, os.O_WRONLY | os.O_APPEND)
        if old_fd is not None:
            os.close(old_fd)
        self.header = header
        _, self._header_len = read_header(self.path)
        self._end = os.fstat(self._fd).st_size
        return header

    # -- reading ---------------------------------------------------------------

    def raw_lines(self) -> Iterator[tuple[int, bytes]]:
        """(line number, bytes) of every complete entry line, header excluded."""
        with open(self.path, "rb") as f:
            f.seek(self._header_len)
            size = os.fstat(f.fileno()).st_size
            limit = size if self.writable else _find_end(f.fileno(), self._header_len, size)
            pos = self._header_len
            number = 1
            for line in f:
                pos += len(line)
                if pos > limit or not line.endswith(b"\n"):
                    break
                number += 1
                yield number, line

    def entries(self) -> Iterator[Entry]:
        """Every readable entry in order; an unreadable line is skipped and noted."""
        for number, line in self.raw_lines():
            try:
                yield parse_entry(json.loads(line))
            except (ValueError, EntryError) as exc:
                self.notices.append(f"{self.path}:{number}: unreadable entry skipped ({exc})")

    def page(
        self, after: int | None = None, before: int | None = None, limit: int = 200
    ) -> list[Entry]:
        """Up to LIMIT entries with seq > AFTER, or the last LIMIT with seq < BEFORE."""
        if limit < 1 or limit > 10000:
            raise TandemError("invalid", "limit must be between 1 and 10000")
        if after is not None and before is not None:
            raise TandemError("invalid", "give either after or before, not both")
        if before is not None:
            window: deque[Entry] = deque(maxlen=limit)
            for e in self.entries():
                if e.seq >= before:
                    break
                window.append(e)
            return list(window)
        out: list[Entry] = []
        start = after or 0
        for e in self.entries():
            if e.seq > start:
                out.append(e)
                if len(out) >= limit:
                    break
        return out

    # -- closing ---------------------------------------------------------------

    def close(self) -> None:
        """Flush to disk, close the file and release the lock (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
