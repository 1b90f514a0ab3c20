"""The projection kept up to date as entries are appended.

`tandem.sessions.projection.project` reads the whole journal: on a 10k-turn
session that is ~80 ms per chat send. `LiveProjection` is fed the entries
the entry cache appends and extends its messages with what is new, so a
send costs what was appended since the last one. ``project`` stays the
reference: after every kind of change the live result must equal it
(``tests/python/compaction/test_live_projection.py``).

What cannot be applied by appending (a compaction, a rewind whose turns are
not the tail of the context, an undo of a rewind, a directive boundary for
a turn already shown) makes the projection rebuild itself from the part of
the journal the projection reads (`projected_tail`): one full pass, then
appending again. These entries are rare (a user's action each).

Messages are never changed once built (a tool call that joins the previous
assistant message replaces it with a copy), so a list handed out earlier
stays what it was.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

from tandem.gcpause import cyclic_gc_paused
from tandem.providers.base import Message
from tandem.sessions.compaction import projected_tail
from tandem.sessions.projection import (
    SUMMARY_PREFIX,
    first_kept,
    images_of,
    message_text,
    msg,
    tool_call,
)
from tandem.store.entry_view import JournalEntry
from tandem.store.rewinds import RewindLedger

_NO_TURN = -1
"""The turn noted for messages no entry's turn produced (a compaction summary)."""


class LiveProjection:
    """One journal's projection, extended entry by entry (see the module doc)."""

    def __init__(self) -> None:
        self.count = 0
        """Entries of the journal seen so far."""
        self.rebuilds = 0
        """Full passes so far (the first one included): what the tests watch."""
        self._reset()

    def _reset(self) -> None:
        self._rw = RewindLedger()
        self._directive: set[int] = set()
        self._hidden: set[int] = set()
        self._messages: list[Message] = []
        self._turns: list[int] = []
        """The turn whose entry created each message (parallel to `_messages`)."""
        self._sizes: list[int] = []
        """Each message's bytes as `estimate_tokens` counts them."""
        self._size = 0
        self._contributed: set[int] = set()
        """Turns that created a message or added a tool call to one."""
        self._crossed: set[int] = set()
        """Turns whose tool call joined a message of another turn."""

    # -- reading -------------------------------------------------------------

    def sync(self, entries: Sequence[JournalEntry]) -> None:
        """Take in ENTRIES[count:], the entries appended since the last call."""
        if len(entries) < self.count:  # the journal was cut back: start over
            self._rebuild(entries)
            return
        with cyclic_gc_paused():
            for i in range(self.count, len(entries)):
                if not self._step(entries[i]):
                    self._rebuild(entries)
                    return
        self.count = len(entries)

    def messages(self) -> list[Message]:
        """The ordinary-chat context (a fresh list; equal to ``project(entries)``)."""
        return list(self._messages)

    def tokens(self, extra: str | None = None) -> int:
        """`estimate_tokens` of the context, plus one user message of text EXTRA when given."""
        size, count = self._size, len(self._messages)
        if extra is not None:
            size, count = size + len(extra.encode("utf-8")), count + 1
        return math.ceil(size / 4) + 4 * count

    # -- appending -------------------------------------------------------------

    def _step(self, e: JournalEntry) -> bool:
        """Apply one appended entry; False when only a rebuild can apply it."""
        kind = e.get("type")
        turn = e.get("turn")
        if kind == "turn_start":
            if isinstance(turn, int):
                self._rw.order.append(turn)
            return True
        if kind == "directive_open":
            if isinstance(turn, int):
                self._directive.add(turn)
                return turn not in self._contributed
            return True
        if kind == "rewind" or kind == "rewind_undo":
            self._rw.see(e, kind)
            hidden = self._rw.hidden()
            if kind == "rewind_undo":
                return hidden == self._hidden
            gone = (hidden - self._hidden) & self._contributed
            self._hidden = hidden
            return not gone or self._cut(gone)
        if kind == "compaction":
            return False
        self._emit(e)
        return True

    def _cut(self, gone: set[int]) -> bool:
        """Drop the messages of the turns GONE when they are the context's tail."""
        if gone & self._crossed:
            return False
        turns = self._turns
        first = len(turns)
        while first > 0 and turns[first - 1] in gone:
            first -= 1
        if any(t in gone for t in turns[:first]):
            return False  # a hidden turn in the middle: rebuild
        self._size -= sum(self._sizes[first:])
        del self._messages[first:], self._turns[first:], self._sizes[first:]
        self._contributed -= gone
        return True

    def _emit(self, e: JournalEntry) -> None:
        turn = e.get("turn")
        if turn.__class__ is not int or turn in self._directive or turn in self._hidden:
            return
        kind = e.get("type")
        if kind == "user" or kind == "assistant":
            self._add(msg(kind, message_text(e),
                          images=images_of(e) if "images" in e else None), turn)
        elif kind == "steer":  # as `project` reads it: a user message
            text = e.get("text", "")
            self._add(msg("user", text if text.__class__ is str else str(text)), turn)
        elif kind == "tool_call":
            call = tool_call(e)
            messages = self._messages
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant":
                # A copy, not an append: a list handed out before keeps its message.
                messages[-1] = msg("assistant", last.text, [*last.tool_calls, call])
                grown = _call_size(call.name, call.input)
                self._sizes[-1] += grown
                self._size += grown
                self._contributed.add(turn)
                if self._turns[-1] != turn:
                    self._crossed.add(turn)
            else:
                self._add(msg("assistant", "", [call]), turn)
        elif kind == "tool_result":
            output = e.get("output", "")
            self._add(msg("tool", output if output.__class__ is str else str(output),
                          call_id=str(e.get("call_id")),
                          is_error=e.get("status") != "completed"), turn)

    def _add(self, m: Message, turn: int) -> None:
        size = len(m.text.encode("utf-8"))
        for call in m.tool_calls:
            size += _call_size(call.name, call.input)
        self._messages.append(m)
        self._turns.append(turn)
        self._sizes.append(size)
        self._size += size
        if turn != _NO_TURN:
            self._contributed.add(turn)

    # -- rebuilding --------------------------------------------------------------

    def _rebuild(self, entries: Sequence[JournalEntry]) -> None:
        """One full pass over the part of ENTRIES the projection reads."""
        self._reset()
        self.rebuilds += 1
        tail = projected_tail(entries)
        start, summary, kept_from = 0, None, 0
        for i, e in enumerate(tail):
            kind = e.get("type")
            turn = e.get("turn")
            if kind == "turn_start":
                if isinstance(turn, int):
                    self._rw.order.append(turn)
            elif kind == "directive_open":
                if isinstance(turn, int):
                    self._directive.add(turn)
            elif kind == "rewind" or kind == "rewind_undo":
                self._rw.see(e, kind)
            elif kind == "compaction":
                start, summary = i + 1, str(e.get("summary", ""))
                kept_from = first_kept(e)
        self._hidden = self._rw.hidden()
        with cyclic_gc_paused():
            if summary is None:
                body: Sequence[JournalEntry] = tail
            else:
                self._add(msg("user", SUMMARY_PREFIX + summary), _NO_TURN)
                self._add(msg("assistant", "Understood."), _NO_TURN)
                body = [*(e for e in tail[:start] if _turn(e) >= kept_from > 0),
                        *tail[start:]]
            for e in body:
                self._emit(e)
        self.count = len(entries)


def _turn(e: JournalEntry) -> int:
    turn = e.get("turn")
    return turn if isinstance(turn, int) else -1


def _call_size(name: str, input: Mapping[str, object]) -> int:  # noqa: A002
    # The same count as `estimate_tokens`, so `tokens` equals it exactly.
    return len(name) + len(json.dumps(input, ensure_ascii=False).encode())
