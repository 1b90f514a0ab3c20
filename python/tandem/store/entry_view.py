"""The typed view of journal entries: a `TypedDict` per entry kind, one union over ``type``.

Domain code reads entries as the dicts the one reader returns
(`tandem.store.entry_cache`); this view types them at no run-time cost, and
mypy narrows `JournalEntry` on ``e["type"] == "turn_start"`` (see
docs/architecture.md, "Journal entries in the domain").

Every line was written through its kind's model (`tandem.store.models`,
which `Journal.append` validates), so a key the model requires is
``Required`` here, and the reader skips a line of a known kind that lacks
one (`REQUIRED`; the model reader skips it too): a subscript never raises.
A key with a default in the model is ``NotRequired`` (older lines may lack
it: read it with ``.get``). Values are not checked (a hand-edited ``turn``
may be a string), so a comparison that would raise keeps its guard. The extra keys some
writers add (a rewind's ``backup``, …) are ``NotRequired`` too. A test
keeps this view and the models in step.

An entry of a kind this tandem does not know is typed as the union but
matches no kind check: the ``else`` of a check is never exhaustive.
"""

# No `from __future__ import annotations`: TypedDict reads NotRequired from the
# evaluated annotations (Python 3.11).
from typing import Any, Literal, NotRequired, TypedDict, Union, get_args


class _Base(TypedDict):
    seq: int
    ts: str


class TurnStartEntry(_Base):
    """``turn_start``: a turn was accepted."""

    type: Literal["turn_start"]
    turn: int
    origin: Literal["chat", "directive"]
    provider: NotRequired[str]
    model: NotRequired[str]
    checkpoint: NotRequired[str | None]
    permission_mode: NotRequired[str]


class ImageRecord(TypedDict):
    """An image of a ``user`` entry: digest, media type, size and name (no bytes)."""

    digest: str
    media_type: str
    size: int
    name: str


class UserEntry(_Base):
    """``user``: the submitted request text, and the images sent with it."""

    type: Literal["user"]
    turn: int
    text: str
    images: NotRequired[list[ImageRecord]]
    attached: NotRequired[str | None]
    context: NotRequired[list[dict[str, object]] | None]


class AssistantEntry(_Base):
    """``assistant``: one complete assistant message."""

    type: Literal["assistant"]
    turn: int
    text: str


class ReasoningEntry(_Base):
    """``reasoning``: one complete reasoning block."""

    type: Literal["reasoning"]
    turn: int
    text: str


class ToolCallEntry(_Base):
    """``tool_call``: the model asked for a tool."""

    type: Literal["tool_call"]
    turn: int
    call_id: str
    name: str
    kind: NotRequired[Literal["read", "edit", "execute", "other"]]
    title: NotRequired[str]
    input: NotRequired[dict[str, object]]


class ToolResultEntry(_Base):
    """``tool_result``: what the tool returned."""

    type: Literal["tool_result"]
    turn: int
    call_id: str
    status: Literal["completed", "failed", "refused"]
    output: NotRequired[Any]


class InteractionEntry(_Base):
    """``interaction``: the user was asked."""

    type: Literal["interaction"]
    turn: int
    interaction_id: str
    kind: NotRequired[Literal["permission"]]
    call_id: NotRequired[str | None]
    title: NotRequired[str]
    options: NotRequired[list[Any]]
    tool: NotRequired[str]
    tool_kind: NotRequired[str]


class InteractionAnswerEntry(_Base):
    """``interaction_answer``: the user answered."""

    type: Literal["interaction_answer"]
    turn: int
    interaction_id: str
    answer: Literal["allow_once", "allow_session", "reject"]


class TurnEndEntry(_Base):
    """``turn_end``: the one terminal path of a turn."""

    type: Literal["turn_end"]
    turn: int
    outcome: Literal["succeeded", "failed", "aborted"]
    error: NotRequired[str | None]
    usage: NotRequired[dict[str, object] | None]
    patch: NotRequired[Any]
    completeness: NotRequired[Any]


class DirectiveOpenEntry(_Base):
    """``directive_open``: opens a directive span."""

    type: Literal["directive_open"]
    turn: int
    workspace: str
    directive: str
    action: str
    attempt: NotRequired[int | None]


class DirectiveCloseEntry(_Base):
    """``directive_close``: closes a directive span."""

    type: Literal["directive_close"]
    turn: int
    directive: str
    outcome: str
    summary: NotRequired[str]


class _Restore(_Base):
    """What a restore of files wrote beside a rewind, its undo or a revert."""

    restored: NotRequired[list[str]]
    deleted: NotRequired[list[str]]


class _RewindFacts(_Restore):
    checkpoint: NotRequired[str | None]
    backup: NotRequired[str]
    turns: NotRequired[list[int]]
    acp_reset: NotRequired[bool]


class RewindEntry(_RewindFacts):
    """``rewind``: hides turns >= before_turn."""

    type: Literal["rewind"]
    turn: NotRequired[int]
    before_turn: int
    resend: NotRequired[bool]


class RewindUndoEntry(_RewindFacts):
    """``rewind_undo``: cancels the rewind at rewind_seq (not with files_only)."""

    type: Literal["rewind_undo"]
    turn: NotRequired[int]
    rewind_seq: int
    before_turn: int
    files_only: NotRequired[bool]
    hides_from: NotRequired[int]


class RewindRecoveryEntry(_Base):
    """``rewind_recovery``: a rewind a crash interrupted, settled."""

    type: Literal["rewind_recovery"]
    turn: NotRequired[int]
    before_turn: int
    outcome: Literal["committed", "rolled-back"]
    put_back: NotRequired[list[str]]
    left: NotRequired[list[str]]
    temp_removed: NotRequired[list[str]]
    safety: NotRequired[str | None]
    checkpoint: NotRequired[str | None]
    backup: NotRequired[str]
    message: NotRequired[str]
    undo: NotRequired[bool]


class RevertEntry(_Restore):
    """``revert``: one hunk or file of turn of_turn reverted from a review."""

    type: Literal["revert"]
    turn: NotRequired[int]
    of_turn: int
    path: str
    hunk: NotRequired[int | None]
    paths: list[str]
    before: str
    after: str


class CompactionEntry(_Base):
    """``compaction``: projection starts here."""

    type: Literal["compaction"]
    turn: NotRequired[int]
    summary: str
    first_kept_turn: NotRequired[int | None]
    tokens_before: NotRequired[int | None]
    tokens_after: NotRequired[int | None]


class AcpSessionEntry(_Base):
    """``acp_session``: the root chat's ACP conversation."""

    type: Literal["acp_session"]
    turn: NotRequired[int]
    acp_session_id: str
    how: Literal["new", "load", "resume", "seeded"]


class AcpOptionEntry(_Base):
    """``acp_option``: a mode or model chosen for an ACP agent."""

    type: Literal["acp_option"]
    turn: NotRequired[int]
    agent: str
    option: Literal["mode", "model"]
    value: str


class RemoteTurnEntry(_Base):
    """``remote_turn``: the agent-server conversation a remote turn ran in, and where."""

    type: Literal["remote_turn"]
    turn: int
    conversation_id: str
    after_event_id: NotRequired[str | None]


class PlanEntry(_Base):
    """``plan``: an agent's plan for the turn."""

    type: Literal["plan"]
    turn: int
    entries: NotRequired[list[dict[str, object]]]


class ProviderChangeEntry(_Base):
    """``provider_change``: the session's provider (and model) for its next turns."""

    type: Literal["provider_change"]
    turn: NotRequired[int]
    provider: str
    model: NotRequired[str]


class SteerEntry(_Base):
    """``steer``: guidance the user gave the running turn, as its next request took it."""

    type: Literal["steer"]
    turn: int
    text: str
    given: NotRequired[str]


class QueueEntry(_Base):
    """``queue``: one change to the session's queue of messages (never conversation)."""

    type: Literal["queue"]
    turn: NotRequired[int]
    op: Literal["add", "edit", "remove", "sent", "hold", "resume"]
    item: NotRequired[str]
    text: NotRequired[str]
    sent_turn: NotRequired[int | None]
    reason: NotRequired[str]
    front: NotRequired[bool]


JournalEntry = Union[  # noqa: UP007 - a type alias mypy narrows on "type"
    TurnStartEntry, UserEntry, AssistantEntry, ReasoningEntry, ToolCallEntry, ToolResultEntry,
    InteractionEntry, InteractionAnswerEntry, TurnEndEntry, DirectiveOpenEntry,
    DirectiveCloseEntry, RewindEntry, RewindUndoEntry, RewindRecoveryEntry, RevertEntry,
    CompactionEntry, AcpSessionEntry, AcpOptionEntry, RemoteTurnEntry, PlanEntry,
    ProviderChangeEntry, SteerEntry, QueueEntry,
]
"""Any journal entry after the header, as read (see the module doc)."""

VIEWS: tuple[type[Any], ...] = get_args(JournalEntry)
"""Every kind's view, for the test that keeps them in step with the models."""

REQUIRED: dict[str, frozenset[str]] = {
    get_args(view.__annotations__["type"])[0]: frozenset(view.__required_keys__)
    for view in VIEWS
}
"""Kind -> the keys a line of that kind must have (the reader skips one without them)."""
