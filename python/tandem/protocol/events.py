"""The events the backend pushes to Emacs: one pydantic model per kind.

Domain code builds one of these and hands it to `EventSink.publish`
(`tandem.events`); the server adds ``session``, ``kind`` and ``seq`` and
sends the fields as a plist (``files_changed`` → ``:files-changed``). The
fields are those the elisp handlers read (`tandem-view-handle-event`,
`tandem-indicator--on-event`, `tandem-overview--on-event`,
`tandem-directive--on-event`); docs/protocol.md is generated from here.

A `Delta` is built per streamed token: the hot path. Its three fields are
typed by the sink that builds it, so it is made with `Delta.of`
(``model_construct``, no validation: measured in docs/architecture.md,
"Events").
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict


class Event(BaseModel):
    """Base of every event's payload; ``kind`` is the name Emacs dispatches on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ClassVar[str]
    """The event's ``:kind``."""


class TurnStarted(Event):
    """A turn was accepted and runs."""

    kind: ClassVar[str] = "turn-started"

    turn: int
    origin: Literal["chat", "directive"]
    provider: str
    model: str
    directive: str | None
    """The directive the turn works on (nil for a chat turn)."""


class Delta(Event):
    """Streamed text of the running turn; consecutive deltas of one stream merge."""

    kind: ClassVar[str] = "delta"

    turn: int
    stream: Literal["text", "reasoning"]
    text: str

    @classmethod
    def of(cls, turn: int, stream: Literal["text", "reasoning"], text: str) -> Delta:
        """A delta without validation (the hot path: one per streamed token)."""
        return cls.model_construct(turn=turn, stream=stream, text=text)


class EntryEvent(Event):
    """One journal entry, as written (a plist with ``:type``, ``:seq``, ``:ts``, …)."""

    kind: ClassVar[str] = "entry"

    entry: dict[str, Any]


class InteractionEvent(Event):
    """The running turn asks the user (a permission question) and waits."""

    kind: ClassVar[str] = "interaction"

    turn: int
    interaction_id: str
    title: str
    tool: str
    options: list[dict[str, str]]
    """The answers offered, each ``:id`` (``allow_once``, ``allow_session``, ``reject``),
    ``:label`` and ``:key``."""


class TurnEndedEvent(Event):
    """The turn's terminal path ran: its outcome is in the journal."""

    kind: ClassVar[str] = "turn-ended"

    turn: int
    outcome: Literal["succeeded", "failed", "aborted"]
    error: str | None
    files_changed: list[str]
    """Paths the turn's patch touched."""


class Resync(Event):
    """Events before it were lost (its seq shows the gap): refetch the journal.

    Sent by the server's outbox itself, never published by domain code.
    """

    kind: ClassVar[str] = "resync"


EVENTS: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (TurnStarted, Delta, EntryEvent, InteractionEvent, TurnEndedEvent, Resync)
}
"""Every event kind the backend sends, with its model."""
