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

Disk model: a failed write (disk full, read-only file system) raises an ``io``
`TandemError` whose message starts with the kind ("disk full: …") and cuts the
file back; if even the cut fails, the next append cuts first, so a torn half
line is never glued to the next entry. Every system call that writes goes
through ``Journal.io`` (a `JournalIO`), the seam fault tests use. Lines with a
non-finite number (NaN, Infinity) are refused on write and read as unreadable.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tandem import faults
from tandem.gcpause import cyclic_gc_paused
from tandem.protocol.base import TandemError
from tandem.store import fsutil, layout
from tandem.store.ids import uuid7
from tandem.store.journal_io import JournalIO
from tandem.store.jsonl import (
    dumps_line,
    find_end,
    last_complete_line,
    loads_line,
    now_iso,
    read_header,
    rewrite_header_file,
)
from tandem.store.lock import JournalLock, LockHeld
from tandem.store.models import (
    Entry,
    EntryError,
    Header,
    entry_to_dict,
    parse_entry,
    parse_lines,
)
from tandem.store.oserrors import describe, io_error

_BACK_CHUNK = 65536
_BATCH = 2000
log = logging.getLogger("tandem.store")


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
        self.io = JournalIO()
        """Where writes go (tests put a faulty disk here)."""
        self._torn = False  # a failed write left bytes past _end that a cut did not remove
        self._unsynced = True
        """Written (or opened) since the last fsync that succeeded: `sync` has work."""

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
        try:
            folder = layout.slug_dir(home, canon, create=True)
            path = folder / layout.journal_name(created, sid)
            lock = JournalLock.acquire(layout.lock_path(path))
        except OSError as exc:
            raise io_error(exc, f"cannot create a session under {home}") from None
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, fsutil.PRIVATE_FILE_MODE)
            try:
                os.write(fd, dumps_line(header.model_dump(mode="json")))
                os.fsync(fd)
            finally:
                os.close(fd)
            fsutil.fsync_dir(folder)
        except BaseException as exc:
            lock.release()
            if isinstance(exc, OSError):
                try:  # a half-created journal would list as damaged
                    os.unlink(path)
                except OSError:
                    pass
                raise io_error(exc, f"cannot create session journal {path}") from None
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
            except OSError as exc:  # a read-only or full home: still readable
                reason = describe(exc, f"cannot lock session {header.id}") + "; opened read-only."
                notices.append(reason)
        elif not writable:
            reason = "opened read-only on request"
        journal = cls(path, header, header_len, lock, reason, notices)
        try:
            journal._scan()
        except OSError as exc:
            journal.close()
            raise io_error(exc, f"cannot open session journal {path}") from None
        except BaseException:
            journal.close()
            raise
        return journal

    def _scan(self) -> None:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            end = find_end(fd, self._header_len, size)
            if end < size:
                torn = os.pread(fd, size - end, end)
                self._set_aside(torn, end)
            self._end = end
            self._read_tail(fd)
        finally:
            os.close(fd)
        if self.writable:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def refresh(self) -> None:
        """Re-read the tail of a read-only journal another process is writing.

        Updates ``last_seq`` and ``last_ts``; a writable journal is always current.
        """
        if self.writable:
            return
        fd = os.open(self.path, os.O_RDONLY)
        try:
            self._end = find_end(fd, self._header_len, os.fstat(fd).st_size)
            self._read_tail(fd)
        finally:
            os.close(fd)

    def _read_tail(self, fd: int) -> None:
        end = self._end
        while end > self._header_len:
            line = last_complete_line(fd, self._header_len, end)
            if line is None:
                break
            try:
                data = loads_line(line)
                seq = data["seq"]
                if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 1:
                    self.last_seq = seq
                    self.last_ts = str(data.get("ts"))
                    return
            except (ValueError, KeyError, TypeError):
                pass
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
        fsutil.private_dir(folder)
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

    def append(self, entry: Mapping[str, Any] | Entry) -> Entry:
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
        try:
            line = dumps_line(entry_to_dict(model))
        except ValueError:
            raise TandemError(
                "invalid", f"Cannot record the {model.type} entry: it holds a non-finite "
                "number (NaN or Infinity), which JSON cannot store; nothing was written."
            ) from None
        if self._torn:
            self._cut_back()  # raises while the disk still refuses
        self._unsynced = True  # before the write: a failed one may still have changed the file
        try:
            faults.point("journal.write")
            written = self.io.write(fd, line)
        except OSError as exc:
            self._cut_back(quiet=True)
            raise io_error(exc, f"cannot append to session {self.id}'s journal {self.path}"
                           ) from None
        if written != len(line):
            self._cut_back(quiet=True)
            raise TandemError(
                "io", f"disk full: only {written} of {len(line)} bytes reached session "
                f"{self.id}'s journal {self.path}; the entry was not saved")
        faults.point("journal.appended")
        self._end += len(line)
        self.last_seq = model.seq
        self.last_ts = model.ts
        return model

    def _cut_back(self, quiet: bool = False) -> None:
        """Cut the file back to the last complete entry (undo a failed write).

        When even that fails, the next append tries again before writing;
        QUIET swallows the error (the caller reports the write's own).
        """
        if self._fd is None:
            return
        self._unsynced = True
        try:
            self.io.truncate(self._fd, self._end)
            self._torn = False
        except OSError as exc:
            self._torn = True
            if not quiet:
                raise io_error(exc, f"cannot repair session {self.id}'s journal {self.path}"
                               ) from None

    def sync(self) -> None:
        """fsync the journal: call at the end of each turn.

        Nothing to do when nothing was written since the last fsync that
        succeeded (the engine syncs before a turn's first entry and at its end:
        one fsync a turn, not two).
        """
        fd = self._require_writable()
        if not self._unsynced:
            return
        try:
            faults.point("journal.fsync")
            self.io.fsync(fd)
            faults.point("journal.synced")
            self._unsynced = False
        except OSError as exc:
            raise io_error(exc, f"cannot save session {self.id}'s journal {self.path}"
                           ) from None

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
        self.sync()
        try:
            rewrite_header_file(self.path, header)
        except OSError as exc:
            raise io_error(exc, f"cannot rewrite the header of {self.path}") from None
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
            limit = size if self.writable else find_end(f.fileno(), self._header_len, size)
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
        batch: list[tuple[int, bytes]] = []
        for item in self.raw_lines():
            batch.append(item)
            if len(batch) >= _BATCH:
                yield from self._parse_batch(batch)
                batch = []
        yield from self._parse_batch(batch)

    def _parse_batch(self, batch: list[tuple[int, bytes]]) -> list[Entry]:
        # Bulk loading creates many objects and no cycles: a cyclic GC pass
        # here would only re-scan every entry already loaded (quadratic-ish).
        with cyclic_gc_paused():
            fast = parse_lines([line for _, line in batch])
        if fast is not None:
            return fast
        out: list[Entry] = []
        for number, line in batch:
            try:
                out.append(parse_entry(loads_line(line)))
            except (ValueError, EntryError) as exc:
                self.notices.append(f"{self.path}:{number}: unreadable entry skipped ({exc})")
        return out

    def lines_backward(self) -> Iterator[bytes]:
        """Complete entry lines from the last to the first (reads from the end)."""
        with open(self.path, "rb") as f:
            fd = f.fileno()
            pos = find_end(fd, self._header_len, os.fstat(fd).st_size)
            rest = b""
            while pos > self._header_len:
                step = min(_BACK_CHUNK, pos - self._header_len)
                pos -= step
                buf = os.pread(fd, step, pos) + rest
                parts = buf.split(b"\n")
                rest = parts[0]  # may be a partial line: joined with the next chunk
                for line in reversed(parts[1:]):
                    if line:
                        yield line + b"\n"
            if rest:
                yield rest + b"\n"

    def page(
        self, after: int | None = None, before: int | None = None, limit: int = 200
    ) -> list[Entry]:
        """Up to LIMIT entries: the first with seq > AFTER, else the last with seq < BEFORE.

        With neither, the last LIMIT entries (what a view shows first). Pages
        toward the end are read backwards from the end of the file, so the
        cost does not grow with the length of the journal.
        """
        if limit < 1 or limit > 10000:
            raise TandemError("invalid", "limit must be between 1 and 10000")
        if after is not None and before is not None:
            raise TandemError("invalid", "give either after or before, not both")
        self.refresh()
        if after is not None and self.last_seq - after <= limit:
            # The page reaches the end (a view catching up): read it backwards.
            newer = [e for e in self._tail_until(lambda s: s <= after) if e.seq > after]
            return newer[::-1][:limit]
        if after is not None:
            out: list[Entry] = []
            for e in self.entries():
                if e.seq > after:
                    out.append(e)
                    if len(out) >= limit:
                        break
            return out
        bound = before if before is not None else self.last_seq + 1
        picked: list[Entry] = []
        for e in self._tail_until(lambda s: False):
            if e.seq < bound:
                picked.append(e)
                if len(picked) >= limit:
                    break
        return picked[::-1]

    def _tail_until(self, stop: Any) -> Iterator[Entry]:
        """Entries from the last backwards, until one whose seq satisfies STOP."""
        for line in self.lines_backward():
            try:
                entry = parse_entry(loads_line(line))
            except (ValueError, EntryError):
                continue  # reported by a forward read; a page just skips it
            yield entry
            if stop(entry.seq):
                return

    # -- closing ---------------------------------------------------------------

    def close(self) -> None:
        """Flush to disk, close the file and release the lock (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                self.io.fsync(fd)
            except OSError as exc:  # reported when it mattered (sync); the lock must go
                log.warning("closing %s: %s", self.path, exc)
            finally:
                os.close(fd)
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def discard_if_empty(path: Path) -> bool:
    """Remove the session journal at PATH if nothing was ever written to it but its header.

    For a session made for a run that failed before its first turn (`tandem ask`
    with no provider): it would only clutter the sessions list. A journal with
    any entry, one held by another process, or one that cannot be read is kept.
    """
    try:
        lock = JournalLock.acquire(layout.lock_path(path))
    except (LockHeld, OSError):
        return False
    try:
        with open(path, "rb") as f:
            content = f.read(1 << 16)
        if content.count(b"\n") != 1 or not content.endswith(b"\n"):
            return False
        if layout.artifacts_dir(path).exists():
            return False
        os.unlink(path)
        fsutil.fsync_dir(path.parent)
    except OSError:
        return False
    finally:
        lock.release()
    try:
        os.unlink(layout.lock_path(path))
    except OSError:
        pass
    return True
