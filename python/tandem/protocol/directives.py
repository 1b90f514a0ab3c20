"""Params of the directive methods (``directives/…``) and the records they carry.

A directive's anchor, its references and the system directive of a request
come from Emacs as they are stored in the workspace log, so the log's
records are these models (`tandem.directives.models` builds on them).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator

from tandem.protocol.base import Params, Reply

Action = Literal["discuss", "implement", "implement-this", "discuss-result", "request-changes",
                 "retry"]
AnchorStatus = Literal["attached", "detached", "source-missing"]

MAX_TEXT = 100_000
"""Longest region text, question, guidance or feedback a request carries."""


class Record(BaseModel):
    """Base of every on-disk record: extra keys are kept, not dropped."""

    model_config = ConfigDict(extra="allow")


class Anchor(Record):
    """Where a directive points: a path relative to the root, a line range, its text."""

    path: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    text: str = ""
    status: AnchorStatus = "attached"

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        if not value or value.startswith("/") or "\0" in value or ".." in value.split("/"):
            raise ValueError(f"anchor path must be relative to the root, not {value!r}")
        return value

    @field_validator("end_line")
    @classmethod
    def _order(cls, value: int, info: Any) -> int:
        start = info.data.get("start_line")
        if isinstance(start, int) and value < start:
            raise ValueError(f"end_line {value} is before start_line {start}")
        return value


class Reference(Record):
    """Another file or region the prompt includes, re-read at send time."""

    path: str
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        return Anchor._relative(value)


class SystemDirective(Record):
    """The system directive a request used (the gptel-shaped ``tandem-directives`` entry)."""

    name: str = ""
    system: str = ""
    template: list[str] = Field(default_factory=list)
    """Alternating user/assistant template turns sent before the prompt."""

    @field_validator("name", "system", "template", mode="before")
    @classmethod
    def _nil(cls, value: Any, info: Any) -> Any:
        # Emacs sends nil for an empty list or string.
        if value is None:
            return [] if info.field_name == "template" else ""
        return value


class DirectiveResult(BaseModel):
    """What a directive's latest surviving exchange came to, in one line.

    ``directives/get`` and ``directives/list`` carry it as ``result`` (null
    before any exchange); the source overlay shows ``text``.
    """

    kind: Literal["attempt", "discussion"]
    seq: int = Field(description="The attempt's or discussion turn's number.")
    outcome: Literal["succeeded", "failed", "aborted"]
    text: str = Field(description="One clean line, at most 120 characters: the answer's first "
                      "line, \"N files changed\", or the outcome and the error's first line.")
    files: int = Field(default=0, description="Files an attempt changed (0 for a discussion).")
    session: str
    turn: int = Field(description="The turn of SESSION the exchange ran as.")


class RootParams(Params):
    """A workspace, by project root."""

    root: str = Field(min_length=1)


class IdParams(RootParams):
    """One directive of a workspace."""

    id: str = Field(min_length=2, max_length=12)


class CreateParams(RootParams):
    """Create a directive on ``path`` lines ``start_line``..``end_line`` (text ``text``)."""

    path: str = Field(min_length=1)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    text: str = Field(default="", max_length=MAX_TEXT)
    request: str
    references: list[Reference] = Field(default_factory=list)


class ListParams(RootParams):
    """The directives of a workspace; archived ones only with ``archived``."""

    archived: bool = False


class GetParams(IdParams):
    """One directive's record; ``diffs`` includes each attempt's full diff."""

    diffs: bool = False


class ActionParams(IdParams):
    """An action on a directive: ``text`` (question, guidance, feedback), ``attempt``."""

    action: Action
    text: str = Field(default="", max_length=MAX_TEXT)
    attempt: int | None = Field(default=None, ge=1)
    system_directive: SystemDirective | None = None


class ActParams(ActionParams):
    """Run an action: ``provider``/``model`` per request; ``session`` for the first binding."""

    provider: str | None = None
    model: str = ""
    session: str | None = None
    permission_mode: Literal["ask", "auto-edit", "read-only"] | None = None


class EditParams(IdParams):
    """Change the request (back to Ready) and/or the references."""

    request: str | None = None
    references: list[Reference] | None = None


class AnchorParams(IdParams):
    """Where the anchor is now, as Emacs sees it."""

    path: str = Field(min_length=1)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    text: str = Field(default="", max_length=MAX_TEXT)
    status: AnchorStatus = "attached"


class ReattachParams(IdParams):
    """Reattach: at ``start_line``..``end_line``, or where the anchor text occurs once."""

    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)


class ArchiveParams(IdParams):
    """Archive (hide) or, with ``archived`` nil, unarchive."""

    archived: bool = True


class RebindParams(IdParams):
    """Move future activity to ``session``; without ``confirm`` only the warning is returned."""

    session: str = Field(min_length=1)
    confirm: bool = False


class DiffParams(IdParams):
    """One attempt's patch."""

    attempt: int = Field(ge=1)


class DirectiveRecord(RootModel[dict[str, Any]]):
    """A directive's record as the front end sees it.

    The workspace record (`tandem.directives.models.DirectiveState`, dumped
    to JSON) with ``actions``, ``workspace`` and ``root``; each attempt's
    ``diff`` is replaced by ``diff_chars`` unless the diffs were asked for.
    """


class DirectiveRow(Reply):
    """One row of ``directives/list``."""

    id: str
    state: str
    request: str
    request_changed: bool
    path: str
    start_line: int
    end_line: int
    anchor_status: str
    anchor_text: str
    attempts: int
    discussion: int
    session: str | None
    archived: bool
    actions: list[str]
    result: DirectiveResult | None


class DirectiveRows(RootModel[list[DirectiveRow]]):
    """``directives/list``: a workspace's directives, oldest first."""


class PromptPreview(Reply):
    """``directives/preview``: the exact prompt an action would send now."""

    prompt: str
    system: SystemDirective
    attempt: int | None
    read_only: bool


class Acted(Reply):
    """``directives/act``: the turn an action started."""

    directive: str
    action: str
    session: str
    turn: int
    attempt: int | None
    workspace: str


class RebindWarning(Reply):
    """``directives/rebind`` unconfirmed: the warning, nothing changed."""

    confirmed: bool
    warning: str
    session: str


class Rebound(RebindWarning):
    """``directives/rebind`` confirmed: the warning shown and the record now."""

    record: DirectiveRecord


class AttemptDiff(Reply):
    """``directives/diff``: an attempt's recorded diff, patch summary and completeness."""

    diff: str
    patch: dict[str, Any] | None
    completeness: str | None
    session: str
    turn: int
    checkpoint: str | None


class WorkspaceInfo(Reply):
    """``directives/workspace``: a project's workspace id, root and log file."""

    id: str
    root: str
    log: str
    notices: list[str]
