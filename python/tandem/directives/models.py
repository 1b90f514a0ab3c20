"""Records of a workspace on disk: the events of its log and the state folded from them.

The log is append-only: each line is one `Event`. Nothing in it is ever
rewritten; the directive state (request, anchor, binding, attempts,
discussion, lifecycle) is a fold over the events plus, at read time, the
rewind entries of the bound session journals. Unknown event kinds and extra
keys are kept, so a newer tandem's records survive.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic reads it: not typing's before 3.12

from tandem.protocol.directives import (
    Action,
    Anchor,
    DirectiveResult,
    Record,
    Reference,
    SystemDirective,
)

ACTIONS: tuple[Action, ...] = ("discuss", "implement", "implement-this", "discuss-result",
                               "request-changes", "retry")
DISCUSSION_ACTIONS: frozenset[str] = frozenset({"discuss", "discuss-result"})
"""Actions that run read-only and record a discussion turn, not an attempt."""

Lifecycle = Literal["ready", "discussed", "implemented", "failed"]

MAX_REQUEST = 20_000


class Exchange(Record):
    """What an attempt and a discussion turn share: one request, its turn, its answer."""

    seq: int = Field(ge=1)
    action: str
    request: str
    text: str = ""
    """The user's guidance, feedback or question (part of the prompt)."""
    prompt: str
    """The exact submitted prompt."""
    directive: SystemDirective = Field(default_factory=SystemDirective)
    answer: str = ""
    error: str | None = None
    outcome: Literal["succeeded", "failed", "aborted"]
    session: str
    turn: int = Field(ge=1)
    provider: str = ""
    repaired: bool = False
    """Recorded at startup from the journal after a crash."""


class ExchangeFields(TypedDict):
    """The `Exchange` fields an attempt and a discussion turn are recorded with."""

    action: str
    request: str
    text: str
    prompt: str
    directive: SystemDirective
    answer: str
    error: str | None
    outcome: Literal["succeeded", "failed", "aborted"]
    session: str
    turn: int
    provider: str


class Attempt(Exchange):
    """One implementation request: immutable once recorded."""

    patch: dict[str, Any] | None = None
    diff: str = ""
    completeness: str | None = None
    checkpoint: str | None = None
    based_on: int | None = None
    """The attempt a Request changes / Retry followed."""


class Discussion(Exchange):
    """One read-only exchange about a directive, maybe attached to an attempt."""

    attempt: int | None = None


class Event(Record):
    """One line of a workspace log: ``kind``, ``seq``, ``ts``, ``directive`` and a body."""

    kind: str
    seq: int = Field(ge=1)
    ts: str
    directive: str | None = None

    def body(self) -> dict[str, Any]:
        """The event's own keys beyond the four every event has (shared: read, do not change).

        What the fold reads; ``model_dump`` would copy every nested record of
        a 2,000-event log on each cold read.
        """
        return self.model_extra or {}


_new = object.__new__
_set = object.__setattr__


def exact_event(data: Any) -> Event | None:
    """DATA (a decoded log line) as an `Event` when its four fields have exactly their
    types (what the writer writes), else None: the caller validates it the usual way.
    DATA becomes the event's extras (the four fields taken out of it): the caller
    hands over a dict it no longer uses.

    Built without validation, as `Event.model_validate` would build it from such
    data (the same fields, the same extras, the same fields set), at a fraction of
    its cost: a cold read of a 2,000-event log makes 2,000.
    """
    if data.__class__ is not dict:
        return None
    kind, seq, ts = data.get("kind"), data.get("seq"), data.get("ts")
    directive = data.get("directive")
    if (kind.__class__ is not str or seq.__class__ is not int or seq < 1
            or ts.__class__ is not str
            or (directive is not None and directive.__class__ is not str)):
        return None
    event = _new(Event)
    _set(event, "__pydantic_fields_set__", set(data))  # the model counts extras as set
    # DATA becomes the extras: the four fields leave it (no copy of the rest).
    del data["kind"], data["seq"], data["ts"]
    data.pop("directive", None)
    _set(event, "__dict__", {"kind": kind, "seq": seq, "ts": ts, "directive": directive})
    _set(event, "__pydantic_extra__", data)
    _set(event, "__pydantic_private__", None)
    return event


class Binding(Record):
    """A directive's bound session, and the sessions it was bound to before."""

    session: str
    previous: list[str] = Field(default_factory=list)


def _no_discards() -> dict[str, list[int]]:
    return {"attempts": [], "discussion": []}


class RequestEdit(TypedDict):
    """One request of a directive's history: the log event that set it."""

    seq: int
    ts: str
    request: str


class DirectiveState(BaseModel):
    """A directive as folded from its events (and the journals' rewinds)."""

    id: str
    request: str
    request_history: list[RequestEdit] = Field(default_factory=list)
    anchor: Anchor
    references: list[Reference] = Field(default_factory=list)
    session: str | None = None
    previous_sessions: list[str] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)
    """Surviving attempts (not rewound), oldest first."""
    discussion: list[Discussion] = Field(default_factory=list)
    """Surviving discussion turns, oldest first."""
    discarded: dict[str, list[int]] = Field(default_factory=_no_discards)
    """Sequence numbers of attempts and discussion turns a rewind removed."""
    archived: bool = False
    state: Lifecycle = "ready"
    request_changed: bool = False
    created: str = ""
    next_attempt: int = 1
    next_discussion: int = 1
    last_activity: int = 0
    """Log seq of the event that decided the state (0: none)."""
    result: DirectiveResult | None = None
    """The one-line result of the latest surviving exchange (`tandem.directives.results`)."""
