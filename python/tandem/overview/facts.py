"""Turn count, tokens and provider of a journal, read cheaply and cached.

The overview shows these for every session of every project, most of them
not open. Only ``turn_start`` and ``turn_end`` lines are parsed (a byte test
skips the rest), and the result is kept per file until its size or
modification time changes, so a refresh after an event re-reads nothing
that did not grow. The counts are the session header's (`session_usage`):
every turn that ended, rewound ones too, since they were paid for.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from tandem.protocol.parallel import LAND_PROVIDER
from tandem.store.entry_cache import scan
from tandem.turns.usage import session_usage

_WANTED = (b'"type":"turn_start"', b'"type":"turn_end"')


@dataclass(frozen=True, slots=True)
class JournalFacts:
    """What the overview shows of one journal's turns."""

    turns: int
    """Turns that ended, as the session's header counts them."""
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
    total, _ = session_usage(entries)
    # tandem's own turns (a parallel session's landing) run no provider: not shown.
    provider = next((str(e.get("provider") or "") for e in reversed(entries)
                     if e["type"] == "turn_start" and e.get("provider") != LAND_PROVIDER), "")
    return JournalFacts(total.turns, total.input_tokens, total.output_tokens, provider)
