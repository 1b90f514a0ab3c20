"""A session's queue: messages the user sent while a turn ran, waiting to go as the next turns.

The queue lives in the journal as ``queue`` entries (one ``op`` each: add,
edit, remove, sent, hold, resume), so a backend restart keeps it; `fold`
reads the queue back from a session's entries, and is pure. The projection
ignores these entries: a queued message is conversation only once it is
sent, and then it is an ordinary turn with its own ``user`` entry.

When a turn ends well the backend sends the first queued message
(`tandem.history.queue`); a turn that fails or is cancelled holds the
queue (a ``hold`` entry with the reason) until the user sends it on
(``resume``). A hold ends by itself when the queue empties.

Guidance given to a running turn (``turns/steer``) that the turn ended
before taking joins the queue's front (an ``add`` with ``front``): it goes
as the next turn, or waits first in a held queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from tandem.events import EventSink
from tandem.protocol.base import QUEUE_TEXT_MAX, TandemError
from tandem.protocol.events import EntryEvent
from tandem.store.entry_view import JournalEntry
from tandem.store.journal import Journal
from tandem.store.models import entry_to_dict

MAX_ITEMS = 50
"""Queued messages a session may hold at once (one more is refused with a sentence)."""

MAX_TEXT = QUEUE_TEXT_MAX
"""Characters of one queued message: the bound of ``turns/send``'s text."""

Op = Literal["add", "edit", "remove", "sent", "hold", "resume"]


@dataclass
class QueuedMessage:
    """One message waiting in the queue."""

    id: str
    text: str
    ts: str


@dataclass
class QueueState:
    """The queue as the journal says it is now."""

    items: list[QueuedMessage] = field(default_factory=list)
    held: str | None = None
    """Why the queue is held (a turn that did not end well), or None: it goes on."""
    added: int = 0
    """How many messages were ever queued (the next id is ``q`` + added + 1)."""

    def find(self, item: str) -> QueuedMessage | None:
        """The queued message ITEM, or None (sent, removed or never queued)."""
        return next((m for m in self.items if m.id == item), None)


def fold(entries: Iterable[JournalEntry]) -> QueueState:
    """The queue that ENTRIES (a session's, oldest first) leave; other kinds are skipped."""
    state = QueueState()
    for e in entries:
        if e["type"] != "queue":
            continue
        op, item = e["op"], e.get("item", "")
        if op == "add":
            state.added += 1
            queued = QueuedMessage(item, e.get("text", ""), e["ts"])
            if e.get("front"):  # a steer its turn ended before taking: it goes first
                state.items.insert(0, queued)
            else:
                state.items.append(queued)
        elif op == "edit":
            found = state.find(item)
            if found is not None:
                found.text = e.get("text", "")
        elif op in ("remove", "sent"):
            state.items = [m for m in state.items if m.id != item]
        elif op == "hold":
            state.held = e.get("reason", "") or "held"
        elif op == "resume":
            state.held = None
        if not state.items:
            state.held = None  # nothing left to hold
    return state


def check_text(text: str) -> str:
    """TEXT as a queued message may be, or a `TandemError` that says why not."""
    if not text.strip():
        raise TandemError("invalid", "Nothing to queue: the message is empty")
    if len(text) > MAX_TEXT:
        raise TandemError("invalid", f"A queued message is at most {MAX_TEXT} characters, "
                                     f"not {len(text)}")
    return text


def find(state: QueueState, item: str) -> QueuedMessage:
    """The queued message ITEM of STATE, or a not-found error that says it may have gone."""
    found = state.find(item)
    if found is None:
        raise TandemError("not-found", f"No queued message {item} in this session "
                                       "(it was sent or deleted)")
    return found


def add_entry(state: QueueState, text: str) -> dict[str, object]:
    """The ``queue`` entry that adds TEXT to STATE's end (refused past `MAX_ITEMS`)."""
    check_text(text)
    if len(state.items) >= MAX_ITEMS:
        raise TandemError("invalid", f"The queue holds at most {MAX_ITEMS} messages; "
                                     "delete one or wait for the running turn")
    return {"type": "queue", "op": "add", "item": f"q{state.added + 1}", "text": text}


def steer_entries(state: QueueState, texts: list[str]) -> list[dict[str, object]]:
    """The ``queue`` entries that put TEXTS (steers a turn ended before taking, in the
    order given) at STATE's front, in the order to write them; past `MAX_ITEMS` too:
    guidance the user gave is never dropped."""
    entries = []
    for n, text in enumerate(texts):
        entries.append({"type": "queue", "op": "add", "item": f"q{state.added + n + 1}",
                        "text": text, "front": True})
    return entries[::-1]  # each joins the front: the last one first


def hold_reason(turn: int, outcome: str, error: str | None) -> str:
    """Why a turn ending with OUTCOME (and ERROR) holds the queue, in the user's words."""
    if outcome == "aborted":
        return f"turn {turn} was cancelled" if not error or "cancel" in error.lower() else (
            f"turn {turn} was interrupted: {error}")
    return f"turn {turn} failed: {error}" if error else f"turn {turn} failed"


def write(journal: Journal, events: EventSink, entry: dict[str, object]) -> dict[str, object]:
    """Append ENTRY (a ``queue`` op) to JOURNAL durably and tell Emacs; the entry written."""
    written = entry_to_dict(journal.append(entry))
    journal.sync()
    events.publish(journal.id, EntryEvent(entry=written))
    return written


def op(kind: Op, item: str = "", **fields: Any) -> dict[str, object]:
    """A ``queue`` entry of op KIND about ITEM with FIELDS."""
    return {"type": "queue", "op": kind, "item": item, **fields}
