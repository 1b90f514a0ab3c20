"""Journal entries as plain dicts, and a cache that parses only what was appended.

The projection, the compaction check and the rewind plan read entries as the
dicts written; going through the pydantic models of `tandem.store.models` is
several times slower on a long journal, and these readers need no validation
beyond "a JSON object".
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tandem.lru import LRU
from tandem.store.journal import Journal
from tandem.store.jsonl import loads_line


def journal_dicts(journal: Journal) -> list[dict[str, Any]]:
    """Every entry of JOURNAL as the dict written (one strict `loads_line` per line).

    The projection reads plain dicts; skipping the pydantic models makes this
    several times faster than ``Journal.entries`` on a long journal. A line
    that is not a JSON object is skipped here; ``Journal.entries`` reports it.
    """
    out: list[dict[str, Any]] = []
    for _, line in journal.raw_lines():
        data = _loads(line)
        if data is not None:
            out.append(data)
    return out


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        data = loads_line(line)  # strict: a NaN or Infinity line is unreadable
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


@dataclass
class _Cached:
    inode: tuple[int, int]
    offset: int
    entries: list[dict[str, Any]]


class EntryCache:
    """Parsed entries per journal file, extended by the lines appended since.

    `maybe_compact` runs before every chat request; re-parsing a 10k-turn
    journal each time would cost hundreds of milliseconds. Journals only
    grow by whole lines; a header rewrite (write-temp-rename: a new inode)
    or a cut-back tail (a smaller file) makes the next read start over.
    """

    def __init__(self, limit: int = 32, max_bytes: int = 64 << 20) -> None:
        self._files: LRU[str, _Cached] = LRU(limit)
        """Journals kept parsed, at most LIMIT of them."""
        self.max_bytes = max_bytes
        """Journal bytes kept parsed at most (a 10 MB journal is ~55 MB of dicts);
        the least recently read go first, the one just read always stays."""

    def entries(self, path: Path) -> list[dict[str, Any]]:
        """The entries of the journal at PATH (a fresh list; the dicts are shared)."""
        key = str(path)
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            inode = (st.st_dev, st.st_ino)
            cached = self._files.get(key)
            if cached is None or cached.inode != inode or st.st_size < cached.offset:
                header = f.readline()
                cached = _Cached(inode, len(header), [])
            f.seek(cached.offset)
            data = f.read(st.st_size - cached.offset)
        end = data.rfind(b"\n") + 1  # a torn or half-written last line waits
        for line in data[:end].splitlines():
            entry = _loads(line)
            if entry is not None:
                cached.entries.append(entry)
        cached.offset += end
        self._files[key] = cached
        total = sum(c.offset for c in (self._files[k] for k in self._files))
        for old in self._files:  # oldest first
            if total <= self.max_bytes or old == key:
                break
            dropped = self._files.pop(old)
            total -= dropped.offset if dropped is not None else 0
        return list(cached.entries)
