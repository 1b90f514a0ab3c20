"""The events the backend pushes to Emacs: one pydantic model per kind.

Domain code builds one of these and hands it to `EventSink.publish`
(`tandem.events`); the server adds ``session``, ``kind`` and ``seq`` and
sends the fields as a plist (``files_changed`` → ``:files-changed``). The
fields are those the elisp handlers read (`tandem-view-handle-event`,
`tandem-indicator--on-event`, `tandem-overview--on-event`,
`tandem-directive--on-event`; a test reads them from the elisp);
docs/protocol.md is generated from here.

A delta is sent per streamed token: the hot path. Its payload is a
`TypedDict` (`Delta`, made by `delta`), not a model: on this machine a
validated model costs ~15 times a dict literal per delta (~1.5-5 µs against
0.15-0.35 µs, by load) and ``model_construct`` more still; measured in
docs/architecture.md, "Events". Its three fields are typed by the code that
makes it (mypy), so validation would check nothing new.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, TypeAdapter

# pydantic reads a TypedDict's schema only from typing_extensions' before Python 3.12.
from typing_extensions import TypedDict


class Event(BaseModel):
    """Base of every event's payload; ``kind`` is the name Emacs dispatches on."""

    # The attribute docstrings are read for docs/protocol.md only (`fields`): pydantic's
    # ``use_attribute_docstrings`` parses each class's source when it is built, at import.
    model_config = ConfigDict(extra="forbid", frozen=True)

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


class Delta(TypedDict):
    """Streamed text of the running turn. Consecutive deltas of one turn and stream are
    merged by the server (up to 256 Ki characters; a longer text is cut in several)."""

    kind: Literal["delta"]
    """Not sent as a field: the event's ``:kind``."""
    turn: int
    """The running turn."""
    stream: Literal["text", "reasoning"]
    """Answer text or reasoning."""
    text: str
    """The text to append."""


def delta(turn: int, stream: Literal["text", "reasoning"], text: str) -> Delta:
    """A `Delta` event of TURN's STREAM carrying TEXT."""
    return {"kind": "delta", "turn": turn, "stream": stream, "text": text}


class EntryEvent(Event):
    """One journal entry was written."""

    kind: ClassVar[str] = "entry"

    entry: dict[str, object]
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


AnyEvent = Union[Event, Delta]  # noqa: UP007 - an alias, spelled as mypy reads it
"""What `EventSink.publish` takes."""

EVENTS: dict[str, type[Any]] = {
    TurnStarted.kind: TurnStarted,
    "delta": Delta,
    EntryEvent.kind: EntryEvent,
    InteractionEvent.kind: InteractionEvent,
    TurnEndedEvent.kind: TurnEndedEvent,
    Resync.kind: Resync,
}
"""Every event kind the backend sends, with its model (a `TypedDict` for deltas)."""


def kind_of(event: AnyEvent) -> str:
    """EVENT's ``:kind``."""
    return event.kind if isinstance(event, Event) else event["kind"]


def payload(event: AnyEvent) -> dict[str, object]:
    """EVENT's fields as plain data (a copy), as the server sends them."""
    if isinstance(event, Event):
        return event.model_dump()
    return {"turn": event["turn"], "stream": event["stream"], "text": event["text"]}


def fields(kind: str) -> dict[str, dict[str, Any]]:
    """The JSON schema of each field of KIND's events, with its docstring (docs/protocol.md)."""
    model = EVENTS[kind]
    schema = TypeAdapter(model).json_schema()
    props: dict[str, dict[str, Any]] = schema.get("properties", {})
    docs = attribute_docstrings(model)
    return {name: {**prop, **({"description": docs[name]} if name in docs else {})}
            for name, prop in props.items() if name != "kind"}


def attribute_docstrings(cls: type[Any]) -> dict[str, str]:
    """``name -> docstring`` of the annotated attributes of CLS (and its bases) in their source."""
    import ast
    import inspect

    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__ != __name__:
            continue
        body = ast.parse(inspect.cleandoc("\n" + inspect.getsource(klass))).body[0]
        assert isinstance(body, ast.ClassDef)
        for node, after in zip(body.body, body.body[1:], strict=False):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                found[node.target.id] = inspect.cleandoc(after.value.value)
    return found
