"""A session's history in the compact form a view renders (``sessions/history``).

``sessions/entries`` validates each entry with its pydantic model and dumps
it again, reading the journal backwards from its end for every page: for a
5k-turn session's 20k entries that was ~0.5 s of the backend's time, and a
plist of eight keys per entry for Emacs to read. Here the entries come from
the shared `EntryCache` (the dicts as written, parsed once per journal and
extended by what is appended; every line was validated when it was written),
and each becomes one positional row: ``(seq, type, turn, ts, text, rest)``,
REST the entry's other fields (None when it has none).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tandem.store.entry_view import JournalEntry

ROW_FIELDS = ("seq", "type", "turn", "ts", "text")
"""The positional fields of a row, in order; REST follows them."""

Row = tuple[int, str, "int | None", "str | None", "str | None", "dict[str, Any] | None"]


def history_rows(entries: Sequence[JournalEntry], before: int | None, limit: int) -> list[Row]:
    """The last LIMIT of ENTRIES (in seq order) with a seq below BEFORE, as rows, oldest first.

    Without BEFORE, the last LIMIT entries. An entry without an integer seq
    (a hand-edited line of an unknown kind) is skipped, as ``sessions/entries``
    skips it. A field of the wrong type for its slot (a turn that is not an
    integer, a text that is not a string) stays in REST under its own name,
    so nothing written is lost.
    """
    picked: list[Row] = []
    for entry in reversed(entries):
        seq = entry.get("seq")
        if type(seq) is not int or (before is not None and seq >= before):
            continue
        picked.append(_row(entry))
        if len(picked) >= limit:
            break
    picked.reverse()
    return picked


def _row(entry: JournalEntry) -> Row:
    rest: dict[str, Any] = dict(entry)
    seq = rest.pop("seq")
    kind = rest.pop("type")
    turn = rest.pop("turn", None) if type(rest.get("turn")) in (int, type(None)) else None
    ts = rest.pop("ts") if isinstance(rest.get("ts"), str) else None
    text = rest.pop("text") if isinstance(rest.get("text"), str) else None
    return (seq, kind, turn, ts, text, rest or None)
