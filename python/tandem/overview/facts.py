"""Turn count, tokens and provider of a journal, read cheaply and cached.

The overview shows these for every session of every project, most of them
not open. Only ``turn_start``, ``turn_end`` and ``rewind`` lines are parsed
(a byte test skips the rest), and the result is kept per file until its
size or modification time changes, so a refresh after an event re-reads
nothing that did not grow.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from tandem.sessions.projection import visible_turns
from tandem.store.entry_cache import scan

_WANTED = (b'"type":"turn_start"', b'"type":"turn_end"', b'"type":"rewind"')


@dataclass(frozen=True, slots=True)
class JournalFacts:
    """What the overview shows of one journal's turns."""

    turns: int
    """Visible turns (those a rewind hid are not counted)."""
    input_tokens: int
    output_tokens: int
    provider: str
    """Provider of the newest turn ("" before the first)."""


class FactsCache:
    """`JournalFacts` per journal path, recomputed when the file changes."""

    def __init__(self, limit: int = 20_000) -> None:
        self._lock = threading.Lock()
        self._known: dict[str, tuple[tuple[int, int], JournalFacts]] = {}
        self.limit = limit
        """At most this many journals are remembered (the oldest read are dropped)."""

    def facts(self, path: str) -> JournalFacts:
        """The facts of the journal at PATH (zeros when it cannot be read)."""
        try:
            st = os.stat(path)
        except OSError:
            return JournalFacts(0, 0, 0, "")
        key = (st.st_size, st.st_mtime_ns)
        with self._lock:
            hit = self._known.get(path)
        if hit is not None and hit[0] == key:
            return hit[1]
        made = read_facts(path)
        with self._lock:
            self._known.pop(path, None)
            self._known[path] = (key, made)
            while len(self._known) > self.limit:
                del self._known[next(iter(self._known))]
        return made


def read_facts(path: str) -> JournalFacts:
    """Scan the journal at PATH for its turns, tokens and newest provider."""
    try:
        entries = scan(path, _WANTED)
    except OSError:
        return JournalFacts(0, 0, 0, "")
    seen, hidden = visible_turns(entries)
    tokens_in = tokens_out = 0
    provider = ""
    for e in entries:
        if e["type"] == "turn_start":
            provider = str(e.get("provider") or "")
        elif e["type"] == "turn_end" and e["turn"] not in hidden:
            usage = e.get("usage")
            if isinstance(usage, dict):
                tokens_in += _count(usage.get("input_tokens"))
                tokens_out += _count(usage.get("output_tokens"))
    return JournalFacts(len(seen - hidden), tokens_in, tokens_out, provider)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
