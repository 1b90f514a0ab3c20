"""A session's history in the compact form a view renders (``sessions/history``).

``sessions/entries`` validates each entry with its pydantic model and dumps
it again, reading the journal backwards from its end for every page: for a
5k-turn session's 20k entries that was ~0.5 s of the backend's time, and a
plist of eight keys per entry for Emacs to read. Here the entries come from
the shared `EntryCache` (the dicts as written, parsed once per journal and
extended by what is appended; every line was validated when it was written),
and each becomes one positional row: ``(seq, type, turn, ts, text, rest)``,
REST the entry's other fields (None when it has none).

Each row is kept printed too (by the printer the transport gives: this
module knows no wire format), so a reply of 20k rows is a join of kept
text rather than 20k prints. Rows and their text live in the `EntryCache`
view: bounded with it, and dropped with it when the journal is read again
from its start (a rewritten header, a cut-back tail).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tandem.store.entry_view import JournalEntry

ROW_FIELDS = ("seq", "type", "turn", "ts", "text")
"""The positional fields of a row, in order; REST follows them."""

Row = tuple[int, str, "int | None", "str | None", "str | None", "dict[str, object] | None"]


class HistoryRows:
    """The rows of one journal's entries, extended by what is appended (an `EntryCache` view).

    A long history is asked for whole more than once (each view that opens
    it, each reload); its rows are made, and printed by PRINTER when given,
    once per entry.
    """

    def __init__(self, printer: Callable[[Row], str] | None = None) -> None:
        self.printer = printer
        """How a row is printed for the wire (None: rows are not kept printed)."""
        self.rows: list[Row] = []
        """One row per entry with an integer seq, in journal order."""
        self.printed: list[str] = []
        """``printed[i]`` is ``rows[i]`` printed by PRINTER (empty without one)."""
        self.count = 0
        """Entries taken in so far."""

    def sync(self, entries: Sequence[JournalEntry]) -> None:
        """Take in ENTRIES[count:], the entries appended since the last call."""
        if len(entries) < self.count:  # the journal was cut back: start over
            self.rows, self.printed, self.count = [], [], 0
        start = len(self.rows)
        for entry in entries[self.count:]:
            if type(entry.get("seq")) is int:
                self.rows.append(_row(entry))
        if self.printer is not None:
            self.printed.extend(map(self.printer, self.rows[start:]))
        self.count = len(entries)

    def span(self, before: int | None, limit: int) -> list[int] | range:
        """The indices in `rows` of `history_rows` (ROWS, BEFORE, LIMIT), in order."""
        return _span(self.rows, before, limit)


def history_rows(rows: Sequence[Row], before: int | None, limit: int) -> list[Row]:
    """The last LIMIT of ROWS (in seq order) with a seq below BEFORE, oldest first.

    Without BEFORE, the last LIMIT rows. An entry without an integer seq
    (a hand-edited line of an unknown kind) has no row: ``sessions/entries``
    skips it too. A field of the wrong type for its slot (a turn that is not
    an integer, a text that is not a string) stays in REST under its own
    name, so nothing written is lost.
    """
    return [rows[i] for i in _span(rows, before, limit)]


def _span(rows: Sequence[Row], before: int | None, limit: int) -> list[int] | range:
    end = len(rows)
    if before is not None:
        while end > 0 and rows[end - 1][0] >= before:
            end -= 1
    picked = range(max(0, end - limit), end)
    if before is None or all(rows[i][0] < before for i in picked):
        return picked
    # Seqs only ever grow in a journal; a hand-edited one that does not is left out here.
    return [i for i in picked if rows[i][0] < before]


def _row(entry: JournalEntry) -> Row:
    rest: dict[str, object] = dict(entry)
    seq, kind = entry["seq"], entry["type"]
    del rest["seq"], rest["type"]
    turn, ts, text = rest.get("turn"), rest.get("ts"), rest.get("text")
    if turn is None or type(turn) is int:
        rest.pop("turn", None)
    else:
        turn = None
    if isinstance(ts, str):
        del rest["ts"]
    else:
        ts = None
    if isinstance(text, str):
        del rest["text"]
    else:
        text = None
    return (seq, kind, turn, ts, text, rest or None)
