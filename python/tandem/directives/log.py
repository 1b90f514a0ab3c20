"""Workspace registry and per-workspace event logs under ``$TANDEM_HOME/workspaces/``.

``registry.json`` maps each canonical project root to its workspace id; it
is replaced whole (write-temp, fsync, rename) under ``registry.lock``. The
workspace id never comes from a file in the user's project.

``<id>.jsonl`` is the workspace's append-only log: one JSON line per event,
written with one ``write`` while holding ``<id>.lock`` (a kernel ``flock``,
so a process that dies releases it). Readers need no lock. A torn last line
(a crash mid-write) is ignored by readers and set aside into
``<id>.torn-<offset>.part`` by the next writer, so no complete event is ever
lost and no half event is ever read.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import msgspec
from pydantic import ValidationError

from tandem.directives.models import Event, exact_event
from tandem.gcpause import cyclic_gc_paused
from tandem.lru import LRU
from tandem.paths import workspaces_dir
from tandem.protocol.base import TandemError
from tandem.store import fsutil, layout
from tandem.store.ids import uuid7
from tandem.store.jsonl import now_iso

Items = list[tuple[str, Mapping[str, object]]]
Compute = Callable[[list[Event]], Items]
"""Given the events in the log (read under the lock), the items to append."""


@dataclass(frozen=True)
class _Parsed:
    """What a reader parsed of one log: up to OFFSET (a line boundary)."""

    inode: int
    offset: int
    events: list[Event]
    lines: int | None
    """Lines before OFFSET; None when not counted (a one-pass read counts none:
    only a notice needs the number, and counting 10 MB costs what parsing half of it does)."""


CACHE_LIMIT = 64
"""Workspace logs kept parsed (least recently read go first)."""
_cache: LRU[Path, _Parsed] = LRU(CACHE_LIMIT)


_LINES = msgspec.json.Decoder()


def _exact_events(whole: bytes | memoryview) -> list[Event] | None:
    """The events of WHOLE (complete lines) when every line decodes and is an exact
    event (`exact_event`): one msgspec pass, no line copies, no model validation.
    None otherwise (a NaN, a lone surrogate escape, a bad line, a field of another
    type): then each line is read by the model, as before, and named when unreadable.
    """
    try:
        decoded = _LINES.decode_lines(whole)  # blank lines are skipped, as below
    except msgspec.DecodeError:
        return None
    out = []
    for data in decoded:
        event = exact_event(data)
        if event is None:
            return None
        out.append(event)
    return out


@contextmanager
def _flock(path: Path) -> Iterator[None]:
    fsutil.private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, fsutil.PRIVATE_FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the flock


def canonical_root(root: str) -> str:
    """The canonical form of project ROOT; it must be an existing absolute directory."""
    if not isinstance(root, str) or not root or not os.path.isabs(os.path.expanduser(root)):
        raise TandemError("invalid", f"The workspace root must be an absolute directory: {root!r}")
    canon = layout.canonical_cwd(root)
    if not os.path.isdir(canon):
        raise TandemError("not-found", f"The workspace root is not a directory: {canon}")
    return canon


class Registry:
    """Canonical root → workspace id, in ``registry.json``."""

    def __init__(self, home: Path) -> None:
        self.dir = workspaces_dir(home)
        self.path = self.dir / "registry.json"

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise TandemError("io", f"The workspace registry {self.path} is unreadable: {exc}. "
                              "Move it aside to start a new one.") from None
        roots = data.get("roots") if isinstance(data, dict) else None
        return {str(k): str(v) for k, v in (roots or {}).items()}

    def lookup(self, root: str) -> str | None:
        """The id of ROOT's workspace, or None when it has none yet."""
        return self._read().get(canonical_root(root))

    def ensure(self, root: str) -> str:
        """The id of ROOT's workspace, registering a new one when needed."""
        canon = canonical_root(root)
        known = self._read().get(canon)
        if known:
            return known
        with _flock(self.dir / "registry.lock"):
            roots = self._read()  # re-read under the lock: another process may have won
            if canon not in roots:
                roots[canon] = uuid7()
                body = json.dumps({"version": 1, "roots": roots}, indent=1, sort_keys=True)
                fsutil.atomic_write(self.path, body.encode("utf-8"))
            return roots[canon]

    def root_of(self, workspace: str) -> str | None:
        """The root registered for WORKSPACE, or None."""
        for root, wid in self._read().items():
            if wid == workspace:
                return root
        return None


class WorkspaceLog:
    """The append-only event log of one workspace."""

    def __init__(self, home: Path, workspace: str) -> None:
        if not workspace or "/" in workspace or workspace.startswith("."):
            raise TandemError("invalid", f"Not a workspace id: {workspace!r}")
        self.workspace = workspace
        self.dir = workspaces_dir(home)
        self.path = self.dir / f"{workspace}.jsonl"
        self.lock_path = self.dir / f"{workspace}.lock"
        self.notices: list[str] = []
        """What readers should tell the user (a torn tail, an unreadable line)."""

    def read(self) -> list[Event]:
        """Every complete event, in order; a torn tail or a bad line is skipped and noted.

        The log is append-only, so a reader keeps what it parsed (per file,
        in this process) and parses only lines appended since.
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            _cache.pop(self.path, None)
            return []
        cached = _cache.get(self.path)
        if cached is None or cached.inode != st.st_ino or st.st_size < cached.offset:
            cached = _Parsed(st.st_ino, 0, [], 0)
        if st.st_size > cached.offset:
            with open(self.path, "rb") as f:
                f.seek(cached.offset)
                raw = f.read(st.st_size - cached.offset)
            cut = raw.rfind(b"\n") + 1
            if cut < len(raw):
                self.notices.append(f"Workspace log {self.path}: an incomplete last line "
                                    f"({len(raw) - cut} bytes) is ignored.")
            events = list(cached.events)
            with cyclic_gc_paused():  # thousands of acyclic models: no collection mid-way
                number = self._parse(raw, events, cached.lines, cached.offset)
            cached = _Parsed(st.st_ino, cached.offset + cut, events, number)
            _cache[self.path] = cached
        return list(cached.events)

    def _parse(self, raw: bytes, events: list[Event], number: int | None, start: int
               ) -> int | None:
        """Append the events of RAW's whole lines (read at offset START, after line
        NUMBER) to EVENTS; return the number of its last line (None: not counted)."""
        cut = raw.rfind(b"\n") + 1  # the rest: empty, or a torn line
        fast = _exact_events(memoryview(raw)[:cut])  # a view: no copy of the log
        if fast is not None:
            events += fast
            return None
        if number is None:  # a notice may need it now
            with open(self.path, "rb") as f:
                number = f.read(start).count(b"\n")
        return self._parse_lines(raw, events, number)

    def _parse_lines(self, raw: bytes, events: list[Event], number: int) -> int:
        """`_parse` line by line, each validated by the model: what a log holding a
        line msgspec refuses, or a field of another type, is read with."""
        for line in raw.split(b"\n")[:-1]:
            number += 1
            if not line.strip():
                continue
            try:
                # pydantic's own JSON parser: no dict built first, then validated
                events.append(Event.model_validate_json(line))
            except (ValueError, ValidationError) as exc:
                self.notices.append(f"Workspace log {self.path}: line {number} is "
                                    f"unreadable ({str(exc).splitlines()[0]}); it is kept "
                                    "and skipped.")
        return number

    def append(self, kind: str, body: Mapping[str, object]) -> Event:
        """Append one event of KIND with BODY under the lock; return it as written."""
        return self.append_many([(kind, body)])[0]

    def append_many(self, items: Items,
                    compute: Compute | None = None) -> list[Event]:
        """Append ITEMS as one write under the lock.

        COMPUTE, if given, is called as ``compute(events)`` with the events
        already in the log (read under the lock) and returns the items to
        append instead; this is how ids are allocated without races.
        """
        with _flock(self.lock_path):
            self._set_aside_torn_tail()
            existing = self.read()
            if compute is not None:
                items = compute(existing)
            seq = existing[-1].seq if existing else 0
            out: list[Event] = []
            data = b""
            for kind, body in items:
                seq += 1
                record = {**body, "kind": kind, "seq": seq, "ts": now_iso()}
                event = Event.model_validate(record)
                line = json.dumps(event.model_dump(exclude_none=False), ensure_ascii=False,
                                  separators=(",", ":"))
                data += (line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
                         + "\n").encode("utf-8")
                out.append(event)
            if not data:
                return out
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                         fsutil.PRIVATE_FILE_MODE)
            try:
                size = os.fstat(fd).st_size
                try:
                    written = os.write(fd, data)
                except OSError as exc:
                    os.ftruncate(fd, size)
                    raise TandemError("io", f"Cannot append to {self.path}: {exc.strerror}"
                                      ) from None
                if written != len(data):
                    os.ftruncate(fd, size)
                    raise TandemError("io", f"Short write to {self.path}; nothing recorded")
                os.fsync(fd)
            finally:
                os.close(fd)
            return out

    def _set_aside_torn_tail(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            return
        try:
            size = os.fstat(fd).st_size
            if not size or os.pread(fd, 1, size - 1) == b"\n":
                return
            # Look back for the last newline, a chunk at a time (lines are small).
            end, cut = size, 0
            while end > 0:
                start = max(0, end - 65536)
                chunk = os.pread(fd, end - start, start)
                at = chunk.rfind(b"\n")
                if at >= 0:
                    cut = start + at + 1
                    break
                end = start
            torn = os.pread(fd, size - cut, cut)
            aside = self.dir / f"{self.workspace}.torn-{cut}.part"
            fsutil.atomic_write(aside, torn)
            os.ftruncate(fd, cut)
            os.fsync(fd)
        finally:
            os.close(fd)
        self.notices.append(f"Workspace log {self.path}: an incomplete last line left by a "
                            f"crash was set aside in {aside}.")
