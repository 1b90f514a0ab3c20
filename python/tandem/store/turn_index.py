"""One index of a journal's entries by turn: each turn's start, end, directive span, request.

The engine (next turn number, crash repair, a turn's outcome), rewind (the
facts of the discarded turns, a turn's patch), compaction and the workspace
(directive turns) all ask "what happened in turn N"; they read it here
instead of each grouping the entries again. The index is built from the
entries as written (plain dicts, see `tandem.store.entry_cache`) and extended
as the journal grows, so it is built once per journal state. The entries a
decision reads (start, end, directive open and close, the request) are typed:
the pydantic models of `tandem.store.models`, validated when first asked for.

Hostile journals: a ``turn_start`` repeated keeps the first as the turn's
start (the later one re-opens the turn, as the crash repair always read it);
a ``turn_end`` without a start is kept but the turn is not "seen"; entries of
unknown kinds stay in the turn's entry list and change nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tandem.store.models import (
    DirectiveClose,
    DirectiveOpen,
    Entry,
    EntryError,
    TurnEnd,
    TurnStart,
    User,
    parse_entry,
)
from tandem.store.rewinds import RewindLedger

_T = TypeVar("_T", bound=Entry)


def typed(data: Mapping[str, Any] | None, cls: type[_T]) -> _T | None:
    """DATA as the entry model CLS, or None when absent or not a valid CLS entry."""
    if data is None:
        return None
    try:
        # Entries built in memory (seeded rows, tests) may lack the seq and ts
        # the journal assigns; decisions never read those two.
        entry = parse_entry({"seq": 1, "ts": "", **data})
    except EntryError:
        return None
    return entry if isinstance(entry, cls) else None


@dataclass
class TurnRecord:
    """The entries of one turn, in journal order, with the ones decisions read."""

    turn: int
    entries: list[Mapping[str, Any]] = field(default_factory=list)
    """Every entry of the turn, in order (unknown kinds included)."""
    first: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    """The first entry of each kind."""
    last: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    """The last entry of each kind."""
    open: bool = False
    """Started and not ended since its last ``turn_start``."""
    open_directive: str | None = None
    """The directive of a span opened and not closed while the turn is open."""
    _typed: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    def _model(self, which: str, kind: str, cls: type[_T]) -> _T | None:
        key = (which, kind)
        if key not in self._typed:
            source = self.first if which == "first" else self.last
            self._typed[key] = typed(source.get(kind), cls)
        found: _T | None = self._typed[key]
        return found

    @property
    def start(self) -> TurnStart | None:
        """The turn's (first) ``turn_start``."""
        return self._model("first", "turn_start", TurnStart)

    @property
    def end(self) -> TurnEnd | None:
        """The turn's first ``turn_end``."""
        return self._model("first", "turn_end", TurnEnd)

    @property
    def last_end(self) -> TurnEnd | None:
        """The turn's last ``turn_end``."""
        return self._model("last", "turn_end", TurnEnd)

    @property
    def directive_open(self) -> DirectiveOpen | None:
        """The turn's first ``directive_open`` (a directive span)."""
        return self._model("first", "directive_open", DirectiveOpen)

    @property
    def directive_close(self) -> DirectiveClose | None:
        """The turn's last ``directive_close``."""
        return self._model("last", "directive_close", DirectiveClose)

    @property
    def user(self) -> User | None:
        """The turn's request (its first ``user`` entry)."""
        return self._model("first", "user", User)

    def texts(self, kind: str) -> list[str]:
        """The ``text`` of every entry of KIND in the turn, in order."""
        return [str(e.get("text", "")) for e in self.entries if e.get("type") == kind]


class TurnIndex:
    """Turn number -> `TurnRecord`, plus which turns rewinds hid (see the module doc)."""

    def __init__(self, entries: Iterable[Mapping[str, Any]] = ()) -> None:
        self.turns: dict[int, TurnRecord] = {}
        """Every turn any entry names, by number."""
        self.seen: set[int] = set()
        """Turns with a ``turn_start``."""
        self.rewinds = RewindLedger()
        """The journal's rewinds and the undos that cancel some of them."""
        self._hidden: set[int] | None = set()
        self.count = 0
        """How many entries were indexed (the cache extends from here)."""
        self.extend(entries)

    @property
    def hidden(self) -> set[int]:
        """Turns hidden by the rewinds no undo cancelled."""
        if self._hidden is None:
            self._hidden = self.rewinds.hidden()
        return self._hidden

    def extend(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """Index ENTRIES, which follow those indexed so far."""
        for e in entries:
            self.count += 1
            kind = e.get("type")
            turn = e.get("turn")
            if kind == "rewind" or kind == "rewind_undo":
                self.rewinds.see(e, kind)
                self._hidden = None
                continue
            if turn.__class__ is not int or not isinstance(kind, str):
                continue
            rec = self.turns.get(turn)
            if rec is None:
                rec = self.turns[turn] = TurnRecord(turn)
            rec.entries.append(e)
            if rec._typed:
                rec._typed.clear()  # a later entry may change what first/last name
            rec.first.setdefault(kind, e)
            rec.last[kind] = e
            if kind == "turn_start":
                if turn not in self.seen:
                    self.rewinds.order.append(turn)
                self.seen.add(turn)
                rec.open, rec.open_directive = True, None
            elif kind == "turn_end":
                rec.open, rec.open_directive = False, None
            elif kind == "directive_open" and rec.open:
                rec.open_directive = str(e.get("directive"))
            elif kind == "directive_close" and rec.open:
                rec.open_directive = None

    def get(self, turn: int) -> TurnRecord | None:
        """The record of TURN, or None when no entry names it."""
        return self.turns.get(turn)

    def next_turn(self) -> int:
        """The number the next accepted turn gets."""
        return 1 + max(self.seen, default=0)

    def open_turns(self) -> list[TurnRecord]:
        """Turns started and not ended (a crash or a refused write), oldest first."""
        return [self.turns[t] for t in sorted(self.turns) if self.turns[t].open]

    def directive_turns(self) -> set[int]:
        """Turns that lie inside a directive boundary."""
        return {t for t, rec in self.turns.items() if "directive_open" in rec.first}
