"""Records of a journal on disk: the header line and the entry lines.

Entry types are those of docs/architecture.md. Every model allows extra keys
so a newer tandem's fields survive a round trip; an entry of an unknown type
parses as the plain `Entry` with all its keys kept.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, ValidationError

JOURNAL_VERSION = 1


class Header(BaseModel):
    """Line 1 of a journal: who the session is and where it belongs."""

    # "constants": a NaN reaches the writer (which refuses it) instead of
    # being turned silently into null.
    model_config = ConfigDict(extra="allow", ser_json_inf_nan="constants")

    type: Literal["header"] = "header"
    version: int = JOURNAL_VERSION
    id: str
    cwd: str
    created: str
    title: str = ""
    previous_files: list[str] = Field(default_factory=list)


class Entry(BaseModel):
    """Any journal line after the header: ``type``, ``seq``, ``ts``, maybe ``turn``."""

    # See Header: a non-finite number is refused on write, never nulled.
    model_config = ConfigDict(extra="allow", ser_json_inf_nan="constants")

    type: str
    seq: int = Field(ge=1)
    ts: str
    turn: int | None = None


class TurnStart(Entry):
    """A turn was accepted; its identity is reserved."""

    type: Literal["turn_start"] = "turn_start"
    turn: int
    origin: Literal["chat", "directive"]
    provider: str = ""
    model: str = ""
    checkpoint: str | None = None
    permission_mode: str = "ask"


class ImageRecord(BaseModel):
    """An image a request carried, as the journal names it: never its bytes."""

    model_config = ConfigDict(extra="allow")

    digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the bytes, the name of their file in the image store."""
    media_type: Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
    size: int = Field(ge=0)
    name: str


class User(Entry):
    """The submitted request text (for a directive: the exact prompt), and its images.

    A request that carried more writes two extra keys, only when there is
    something (an ordinary line stays as short as before): ``attached``,
    what its ``@`` mentions attached, as the model got it after the text;
    ``context``, a record per mention and instruction file (kind, path,
    size, bytes sent, digest; never the text itself).
    """

    type: Literal["user"] = "user"
    turn: int
    text: str
    images: list[ImageRecord] = Field(default_factory=list, exclude_if=lambda v: not v)
    """Left out of the line when empty: a request without images is written as before."""


class Assistant(Entry):
    """One complete assistant message."""

    type: Literal["assistant"] = "assistant"
    turn: int
    text: str


class Reasoning(Entry):
    """One complete reasoning block."""

    type: Literal["reasoning"] = "reasoning"
    turn: int
    text: str


class ToolCall(Entry):
    """The model asked for a tool."""

    type: Literal["tool_call"] = "tool_call"
    turn: int
    call_id: str
    name: str
    kind: Literal["read", "edit", "execute", "other"] = "other"
    title: str = ""
    input: dict[str, object] = Field(default_factory=dict)


class ToolResult(Entry):
    """What the tool returned."""

    type: Literal["tool_result"] = "tool_result"
    turn: int
    call_id: str
    status: Literal["completed", "failed", "refused"]
    output: Any = None


class Interaction(Entry):
    """The user was asked (a permission question)."""

    type: Literal["interaction"] = "interaction"
    turn: int
    interaction_id: str
    kind: Literal["permission"] = "permission"
    call_id: str | None = None
    title: str = ""
    options: list[Any] = Field(default_factory=list)


class InteractionAnswer(Entry):
    """The user answered an interaction."""

    type: Literal["interaction_answer"] = "interaction_answer"
    turn: int
    interaction_id: str
    answer: Literal["allow_once", "allow_session", "reject"]


class TurnEnd(Entry):
    """The one terminal path of a turn."""

    type: Literal["turn_end"] = "turn_end"
    turn: int
    outcome: Literal["succeeded", "failed", "aborted"]
    error: str | None = None
    usage: dict[str, object] | None = None
    patch: Any = None
    completeness: Any = None


class DirectiveOpen(Entry):
    """Opens a directive span."""

    type: Literal["directive_open"] = "directive_open"
    turn: int
    workspace: str
    directive: str
    action: str
    attempt: int | None = None


class DirectiveClose(Entry):
    """Closes a directive span (the directive frame)."""

    type: Literal["directive_close"] = "directive_close"
    turn: int
    directive: str
    outcome: str
    summary: str = ""


class Rewind(Entry):
    """Hides turns >= before_turn from view and projection."""

    type: Literal["rewind"] = "rewind"
    before_turn: int = Field(ge=1)


class RewindUndo(Entry):
    """Cancels the ``rewind`` entry at ``rewind_seq``: its turns count again.

    With ``files_only`` only the files went back to the rewind's backup
    checkpoint and the rewind still hides its turns.
    """

    type: Literal["rewind_undo"] = "rewind_undo"
    rewind_seq: int = Field(ge=1)
    before_turn: int = Field(ge=1)
    files_only: bool = False


class RewindRecovery(Entry):
    """A rewind a crash interrupted, settled on the next start or open.

    ``committed``: its ``rewind`` entry had been written, so it stands (only
    the leftovers were cleaned up). ``rolled-back``: it had not, so the files
    went back to the backup checkpoint and no turn is hidden.
    """

    type: Literal["rewind_recovery"] = "rewind_recovery"
    before_turn: int = Field(ge=1)
    outcome: Literal["committed", "rolled-back"]


class Revert(Entry):
    """One hunk or one file of turn ``of_turn``'s patch reverted from a review.

    Outside any turn (``of_turn``, not ``turn``). ``before``/``after`` are
    the checkpoints of the files around it; ``paths`` every path it concerns.
    """

    type: Literal["revert"] = "revert"
    of_turn: int = Field(ge=1)
    path: str
    hunk: int | None = None
    paths: list[str]
    before: str
    after: str


class Compaction(Entry):
    """Projection starts here."""

    type: Literal["compaction"] = "compaction"
    summary: str
    first_kept_turn: int | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None


class AcpSession(Entry):
    """The root chat's ACP conversation."""

    type: Literal["acp_session"] = "acp_session"
    acp_session_id: str
    how: Literal["new", "load", "resume", "seeded"]


class RemoteTurn(Entry):
    """Where a turn of a remote session ran: its agent-server conversation.

    ``after_event_id`` is the id of the conversation's last server event
    before the turn's message (None: the turn was the conversation's first),
    so a Rewind before the turn can move the conversation back there
    (``/navigate``). The engine writes it from the provider's
    ``TurnResult.remote_turn``.
    """

    type: Literal["remote_turn"] = "remote_turn"
    turn: int
    conversation_id: str = Field(min_length=1)
    after_event_id: str | None = None


class AcpOption(Entry):
    """The user chose an ACP agent's mode or model for the session."""

    type: Literal["acp_option"] = "acp_option"
    agent: str
    option: Literal["mode", "model"]
    value: str


class Plan(Entry):
    """An agent's plan for the turn (ACP ``plan``): what it means to do, and how far it got."""

    type: Literal["plan"] = "plan"
    turn: int
    entries: list[dict[str, object]] = Field(default_factory=list)
    """Each as the agent sent it: ``content``, ``priority``, ``status`` (pending, in_progress,
    completed)."""


class ProviderChange(Entry):
    """The user switched the session's provider (and model) for its next turns."""

    type: Literal["provider_change"] = "provider_change"
    provider: str = Field(min_length=1)
    model: str = ""


class Steer(Entry):
    """Guidance the user gave the running turn (``turns/steer``), sent at its next step.

    Written when the agent loop takes it, just before the model request that
    carries it as a user message: so it sits in the journal where the model
    saw it, after the step's tool results. ``given`` is when the user gave it.
    """

    type: Literal["steer"] = "steer"
    turn: int
    text: str
    given: str = ""


class Queue(Entry):
    """One change to the session's queue: messages waiting for the running turn to end.

    Not conversation: the projection ignores it. ``op`` is ``add`` (ITEM
    with TEXT joins the end), ``edit`` (ITEM's text becomes TEXT), ``remove``
    (the user deleted ITEM), ``sent`` (ITEM went as turn SENT_TURN, an
    ordinary turn from then on), ``hold`` (a turn that did not end well
    stops the queue, REASON says which) or ``resume`` (the user sends the
    held queue on). No ``turn`` key: the entry belongs to no turn. An ``add``
    with FRONT joins the front instead: guidance the turn ended before taking.
    """

    type: Literal["queue"] = "queue"
    op: Literal["add", "edit", "remove", "sent", "hold", "resume"]
    item: str = ""
    text: str = ""
    front: bool = False
    sent_turn: int | None = None
    reason: str = ""


ENTRY_TYPES: dict[str, type[Entry]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        TurnStart,
        User,
        Assistant,
        Reasoning,
        ToolCall,
        ToolResult,
        Interaction,
        InteractionAnswer,
        TurnEnd,
        DirectiveOpen,
        DirectiveClose,
        Rewind,
        RewindUndo,
        RewindRecovery,
        Revert,
        Compaction,
        AcpSession,
        AcpOption,
        RemoteTurn,
        Plan,
        ProviderChange,
        Steer,
        Queue,
    )
}
"""Known entry types by their ``type`` value."""


class EntryError(ValueError):
    """A line that is JSON but not a valid entry."""


def parse_entry(data: dict[str, Any]) -> Entry:
    """Validate DATA as the entry model of its ``type`` (plain `Entry` if unknown)."""
    if not isinstance(data, dict):
        raise EntryError(f"an entry must be a JSON object, not {type(data).__name__}")
    kind = data.get("type")
    if not isinstance(kind, str) or not kind or kind == "header":
        raise EntryError(f"entry has no valid type: {kind!r}")
    cls = ENTRY_TYPES.get(kind, Entry)
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise EntryError(f"invalid {kind} entry: {exc}") from exc


def entry_to_dict(entry: Entry) -> dict[str, object]:
    """The JSON object written for ENTRY (extra keys included, untouched).

    ``turn`` is left out when the entry belongs to no turn, so an entry of an
    unknown type is written back with exactly the keys it came with.
    """
    data = entry.model_dump(mode="json")
    if data.get("turn", 0) is None:
        del data["turn"]
    return data


def _tag(value: Any) -> str | None:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if not isinstance(kind, str) or not kind or kind == "header":
        return None  # no tag: a validation error, handled line by line
    return kind if kind in ENTRY_TYPES else "other"


_ANY_ENTRY: Any = Annotated[
    Union[  # noqa: UP007 - a tuple of types built at run time
        tuple(Annotated[cls, Tag(kind)] for kind, cls in ENTRY_TYPES.items())
        + (Annotated[Entry, Tag("other")],)
    ],
    Discriminator(_tag),
]
_NON_FINITE = re.compile(rb"NaN|Infinity|[0-9][eE][+-]?[0-9]{3}")
"""What may be a non-finite number (or text that looks like one: then the slow path)."""
_MANY = TypeAdapter(list[_ANY_ENTRY])


def parse_lines(lines: list[bytes]) -> list[Entry] | None:
    """Validate many JSON lines at once (one pass in pydantic-core).

    Returns None when any line is bad, so the caller can go line by line and
    say which one; the fast path is for the common, clean case.
    """
    if not lines:
        return []
    payload = b"[" + b",".join(line.rstrip(b"\n") for line in lines) + b"]"
    if _NON_FINITE.search(payload):
        return None  # pydantic's parser accepts NaN and 1e999; the strict path does not
    try:
        return _MANY.validate_json(payload)
    except (ValidationError, ValueError):
        return None
