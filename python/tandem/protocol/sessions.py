"""Params and replies of the session methods (``sessions/…``).

Opening and switching sessions, their entries, compaction, rewind and its
undo, one turn's patch, the overview of every session and a session's token
totals.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from tandem.protocol.base import Params, Reply
from tandem.protocol.checkpoints import Patch
from tandem.protocol.turns import SessionId


class SessionInfo(Reply):
    """An active session: identity, journal, recorded and active directory, settings."""

    id: str
    path: str
    cwd: str
    active_cwd: str
    relocated: bool
    previous_files: list[str]
    title: str
    writable: bool
    notices: list[str]
    settings: dict[str, Any]
    settings_warnings: list[str]
    """Settings that do not apply: untrusted project keys, invalid files."""


class ListParams(Params):
    """``cwd``: list this project's sessions; omit (or ``all``) for every project."""

    cwd: str | None = None
    all: bool = False


class NewParams(Params):
    """Create a session in ``cwd`` titled ``title``."""

    cwd: str
    title: str = Field(default="", max_length=500)


class LookupParams(Params):
    """Find session ``query`` (id or unique prefix) from the project ``cwd``."""

    query: str
    cwd: str


class ResumeParams(Params):
    """Resume ``query`` from ``cwd``; ``relocate`` is the user's answer, if asked."""

    query: str
    cwd: str
    relocate: bool | None = None


class OpenFileParams(Params):
    """Open the journal at ``path`` directly, launched from ``cwd``."""

    path: str
    cwd: str


class SwitchParams(Params):
    """Switch the running session to ``target`` (journal path or id)."""

    target: str


class ContinueParams(Params):
    """Continue the latest session for ``cwd``."""

    cwd: str


class CurrentParams(Params):
    """No parameters."""


class EntriesParams(Params):
    """A page of ``session``'s entries: after seq ``after`` or before seq ``before``."""

    session: str
    after: int | None = Field(default=None, ge=0)
    before: int | None = Field(default=None, ge=1)
    limit: int = Field(default=200, ge=1, le=10000)


class RelocateParams(Params):
    """Re-root session ``target`` (id or path) into directory ``cwd``."""

    target: str
    cwd: str


class CloseParams(Params):
    """Close ``session``: stop its providers and release its journal."""

    session: str


class CompactParams(Params):
    """Compact ``session``; ``provider`` overrides the session's own (e.g. a cheaper model)."""

    session: str = Field(min_length=1)
    provider: str | None = None


class SessionOnlyParams(Params):
    """Just ``session``."""

    session: str = Field(min_length=1)


class StatusParams(Params):
    """How full ``session``'s context is for ``provider`` (default: the session's)."""

    session: str = Field(min_length=1)
    provider: str | None = None


class PlanParams(Params):
    """``sessions/rewind-plan``: what rewinding ``session`` before ``turn`` would do."""

    session: str = Field(min_length=1)
    turn: int = Field(ge=1)


class RewindParams(Params):
    """``sessions/rewind``: rewind ``session`` before ``turn`` as planned with ``digest``."""

    session: str = Field(min_length=1)
    turn: int = Field(ge=1)
    digest: str = Field(min_length=64, max_length=64, pattern=r"^[0-9a-f]{64}$")


class UndoPlanParams(Params):
    """``sessions/rewind-undo-plan``: what undoing ``session``'s latest rewind would do."""

    session: str = Field(min_length=1)
    files_only: bool = False
    """Put only the files back; the rewound turns stay rewound."""


class UndoParams(Params):
    """``sessions/rewind-undo``: undo ``session``'s latest rewind as planned with ``digest``."""

    session: str = Field(min_length=1)
    digest: str = Field(min_length=64, max_length=64, pattern=r"^[0-9a-f]{64}$")
    files_only: bool = False


class TurnPatchParams(Params):
    """``sessions/turn-patch``: the patch of ``turn`` of ``session``."""

    session: str = Field(min_length=1)
    turn: int = Field(ge=1)


class TurnPatch(Reply):
    """One turn's patch with the unified diff text."""

    session: str
    turn: int
    root: str
    """The workspace root the patch's paths are relative to."""
    running: bool
    """True while the turn is in flight: the patch goes to the files now."""
    rewound: bool
    """True when a rewind hid this turn (its patch is history)."""
    patch: Patch


class UsageParams(Params):
    """The token totals of SESSION."""

    session: str = SessionId


OverviewState = Literal["waiting", "running", "idle", "closed", "directory-gone", "damaged"]


class OverviewParams(Params):
    """``cwd``: only this project's sessions; omit for every project."""

    cwd: str | None = None


class OverviewRow(Reply):
    """One session in the overview."""

    id: str
    path: str
    title: str
    cwd: str
    last_activity: str
    state: OverviewState
    question: str | None = None
    """The waiting question's title (state ``waiting``)."""
    turn: int | None = None
    """The running turn (states ``running`` and ``waiting``)."""
    provider: str = ""
    engine: str = ""
    """``acp`` (an agent process) or ``native`` (tandem's own loop); "" before a turn."""
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    damaged: str | None = None


class Overview(Reply):
    """Every session, those waiting for the user first."""

    rows: list[OverviewRow] = Field(default_factory=list)
