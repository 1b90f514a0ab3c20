"""The events the backend pushes to Emacs: one pydantic model per kind.

Domain code builds one of these and hands it to `EventSink.publish`
(`tandem.events`); the server adds ``session``, ``kind`` and ``seq`` and
sends the fields as a plist (``files_changed`` → ``:files-changed``). The
fields are those the elisp handlers read (`tandem-view-handle-event`,
`tandem-indicator--on-event`, `tandem-overview--on-event`,
`tandem-directive--on-event`; a test reads them from the elisp);
docs/protocol.md is generated from here.

A `Delta` is built per streamed token: the hot path. It is built validated,
as every event: ~1.5 µs on this machine, and ``model_construct`` is about
twice as slow (docs/architecture.md, "Events"), so skipping validation
would gain nothing.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict


class Event(BaseModel):
    """Base of every event's payload; ``kind`` is the name Emacs dispatches on."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    kind: ClassVar[str]
    """The event's ``:kind``."""


class TurnStarted(Event):
    """A turn was accepted and runs."""

    kind: ClassVar[str] = "turn-started"

    turn: int
    """The turn's number."""
    origin: Literal["chat", "directive"]
    """Who started it: the chat or a directive."""
    provider: str
    """The provider running it (`openai:gpt-4o`, `acp:claude`, …)."""
    model: str
    """The model asked for ("" for the provider's default)."""
    directive: str | None
    """The directive the turn works on (nil for a chat turn)."""


class Delta(Event):
    """Streamed text of the running turn. Consecutive deltas of one turn and stream are
    merged by the server (up to 256 Ki characters; a longer text is cut in several)."""

    kind: ClassVar[str] = "delta"

    turn: int
    """The running turn."""
    stream: Literal["text", "reasoning"]
    """Answer text or reasoning."""
    text: str
    """The text to append."""


class EntryEvent(Event):
    """One journal entry was written."""

    kind: ClassVar[str] = "entry"

    entry: dict[str, Any]
    """The entry as written: `:type`, `:seq`, `:ts`, maybe `:turn`, and its kind's fields
    (docs/architecture.md, Journal)."""


class InteractionEvent(Event):
    """The running turn asks the user (a permission question) and waits for `turns/answer`."""

    kind: ClassVar[str] = "interaction"

    turn: int
    """The running turn."""
    interaction_id: str
    """What the answer names."""
    title: str
    """The question, for people."""
    tool: str
    """The tool that asks."""
    options: list[dict[str, str]]
    """The answers offered, each `:id` (`allow_once`, `allow_session`, `reject`), `:label`
    and `:key`."""


class TurnEndedEvent(Event):
    """The turn's terminal path ran; its `turn_end` entry is in the journal."""

    kind: ClassVar[str] = "turn-ended"

    turn: int
    """The turn that ended."""
    outcome: Literal["succeeded", "failed", "aborted"]
    """How it ended."""
    error: str | None
    """Why it failed or was aborted (nil when it succeeded)."""
    files_changed: list[str]
    """Paths its patch touched."""


class Resync(Event):
    """Events before it were lost (its seq shows the gap): refetch the journal. Sent by the
    server's outbox itself, never published by domain code."""

    kind: ClassVar[str] = "resync"


EVENTS: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (TurnStarted, Delta, EntryEvent, InteractionEvent, TurnEndedEvent, Resync)
}
"""Every event kind the backend sends, with its model."""
