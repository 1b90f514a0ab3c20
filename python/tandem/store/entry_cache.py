"""The one reader of journal entries as plain dicts, and a cache that parses only what was appended.

The projection, the compaction check, the rewind plan, the engine and the
workspace read entries as the dicts written, typed by the view of
`tandem.store.entry_view` (`JournalEntry`); going through the pydantic
models of `tandem.store.models` is 2.4 times slower on a long journal
(docs/architecture.md, "Journal entries in the domain"), and every line was
validated by its model when it was written. Where a decision needs a
validated entry, it gets the entry's model from the `TurnIndex` kept beside
the entries.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import msgspec

from tandem.gcpause import cyclic_gc_paused
from tandem.lru import LRU
from tandem.store.entry_view import REQUIRED, JournalEntry
from tandem.store.journal import Journal
from tandem.store.jsonl import loads_line
from tandem.store.turn_index import TurnIndex

MAX_FILES = 64
"""Journals kept parsed at once; the least recently read goes first."""


def journal_dicts(journal: Journal) -> list[JournalEntry]:
    """Every entry of JOURNAL as the dict written (one strict `loads_line` per line).

    A line that is not a JSON object, has no string ``type``, or lacks a key
    its kind requires (`tandem.store.entry_view.REQUIRED`) is skipped here;
    ``Journal.entries`` reports it.
    """
    out: list[JournalEntry] = []
    for _, line in journal.raw_lines():  # line by line: no copy of the whole file
        entry = _loads(line)
        if entry is not None:
            out.append(entry)
    return out


_LINES = msgspec.json.Decoder()


def parse_chunk(data: bytes) -> list[JournalEntry]:
    """The entries of DATA, whole entry lines (no header); bad lines skipped.

    One msgspec pass over all the lines (no copy of each line, no call per
    line) when every line decodes; a chunk holding a line it refuses (a NaN,
    a lone surrogate escape, a torn or garbled line) is read line by line.
    Either way each line is what `loads_line` makes of it.
    """
    try:
        decoded = _LINES.decode_lines(data)  # blank lines skipped, as `_loads` skips them
    except msgspec.DecodeError:
        decoded = None
    out: list[JournalEntry] = []
    if decoded is not None:
        for value in decoded:
            entry = _entry(value)
            if entry is not None:
                out.append(entry)
        return out
    for line in data.splitlines():
        entry = _loads(line)
        if entry is not None:
            out.append(entry)
    return out


def scan(path: str | Path, needles: tuple[bytes, ...]) -> list[JournalEntry]:
    """The entries of the journal file at PATH whose line holds one of NEEDLES.

    A byte test runs before any parse, so a reader that needs a few kinds of
    many journals (the overview) parses only those lines. Raises `OSError`.
    """
    out: list[JournalEntry] = []
    with open(path, "rb") as f:
        for line in f:
            if any(w in line for w in needles):
                entry = _loads(line)  # a torn or damaged line: the listing says so elsewhere
                if entry is not None:
                    out.append(entry)
    return out


def _loads(line: bytes) -> JournalEntry | None:
    """The entry on LINE; None for the header or a line that is not a JSON object."""
    try:
        data = loads_line(line)  # strict: a NaN or Infinity line is unreadable
    except ValueError:
        return None
    return _entry(data)


def _entry(data: Any) -> JournalEntry | None:
    """The decoded line DATA as an entry; None for the header or what is no entry."""
    if not isinstance(data, dict) or not isinstance(data.get("type"), str) \
            or data["type"] == "header":
        return None  # no kind: nothing can read it as an entry (Journal.entries skips it too)
    need = REQUIRED.get(data["type"])
    if need is not None and not need <= data.keys():
        return None  # a hand-edited line the model would refuse too (Journal.entries says so)
    # The one place the view is claimed: the line was validated when written.
    return cast(JournalEntry, data)


class View(Protocol):
    """Something kept beside a journal's entries and told of each append."""

    def sync(self, entries: Sequence[JournalEntry], /) -> None:
        """Take in the entries appended since the last call (ENTRIES is all of them)."""


V = TypeVar("V", bound=View)


@dataclass
class _Cached:
    inode: tuple[int, int]
    offset: int
    entries: list[JournalEntry]
    index: TurnIndex = field(default_factory=TurnIndex)
    views: dict[Callable[[], Any], Any] = field(default_factory=dict)
    """Views of these entries by factory (see `EntryCache.view`)."""


class EntryCache:
    """Parsed entries per journal file, extended by the lines appended since.

    `maybe_compact` runs before every chat request; re-parsing a 10k-turn
    journal each time would cost hundreds of milliseconds. Journals only
    grow by whole lines; a header rewrite (write-temp-rename: a new inode)
    or a cut-back tail (a smaller file) makes the next read start over. At
    most MAX_FILES journals are kept (least recently read dropped first), so
    a backend that reads many sessions' journals does not grow without bound.
    """

    def __init__(self, limit: int = MAX_FILES, max_bytes: int = 64 << 20) -> None:
        self._files: LRU[str, _Cached] = LRU(limit)
        """Journals kept parsed, at most LIMIT of them."""
        self.max_bytes = max_bytes
        """Journal bytes kept parsed at most (a 10 MB journal is ~55 MB of dicts);
        the least recently read go first, the one just read always stays."""

    def entries(self, path: Path) -> list[JournalEntry]:
        """The entries of the journal at PATH (a fresh list; the dicts are shared)."""
        return list(self._read(path).entries)

    def index(self, path: Path) -> TurnIndex:
        """The `TurnIndex` of the journal at PATH, extended to its current entries.

        Shared: callers read it and must not change it.
        """
        cached = self._read(path)
        if cached.index.count < len(cached.entries):
            with cyclic_gc_paused():
                cached.index.extend(cached.entries[cached.index.count:])
        return cached.index

    def view(self, path: Path, factory: Callable[[], V]) -> V:
        """The view FACTORY makes of the journal at PATH, told of the entries appended since.

        One view per factory and journal state: a journal read again from
        the start (new inode, cut-back tail) gets a fresh view. Shared:
        callers read it and must not change it.
        """
        cached = self._read(path)
        found = cached.views.get(factory)
        if found is None:
            found = cached.views[factory] = factory()
        found.sync(cached.entries)
        return found

    def read(self, path: Path) -> list[JournalEntry]:
        """Like `entries`, but a journal that cannot be read has no entries (no error).

        For readers of other sessions' journals (the workspace), where a
        journal gone or unreadable hides nothing and must not fail the call.
        """
        try:
            return self.entries(path)
        except OSError:
            self._files.pop(str(path), None)
            return []

    def index_at(self, path: Path) -> TurnIndex:
        """Like `index`, but an unreadable journal has an empty index (see `read`)."""
        try:
            return self.index(path)
        except OSError:
            self._files.pop(str(path), None)
            return TurnIndex()

    def _read(self, path: Path) -> _Cached:
        key = str(path)
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            inode = (st.st_dev, st.st_ino)
            cached = self._files.get(key)
            if cached is None or cached.inode != inode or st.st_size < cached.offset:
                header = f.readline()
                cached = _Cached(inode, len(header) if header.endswith(b"\n") else 0, [])
                if not header.endswith(b"\n"):
                    return cached  # not even a whole header yet: nothing to keep
            f.seek(cached.offset)
            data = f.read(st.st_size - cached.offset)
        end = data.rfind(b"\n") + 1  # a torn or half-written last line waits
        with cyclic_gc_paused():  # tens of thousands of acyclic dicts (see gcpause)
            cached.entries.extend(parse_chunk(data[:end]))
        cached.offset += end
        self._files[key] = cached
        total = sum(c.offset for c in (self._files[k] for k in self._files))
        for old in self._files:  # oldest first
            if total <= self.max_bytes or old == key:
                break
            dropped = self._files.pop(old)
            total -= dropped.offset if dropped is not None else 0
        return cached
