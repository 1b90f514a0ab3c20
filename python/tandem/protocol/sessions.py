"""Params and replies of the session methods (``sessions/…``).

Opening and switching sessions, their entries, compaction, rewind and its
undo, one turn's patch, the overview of every session and a session's token
totals.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from tandem.protocol.base import Params, Printed, Reply, Vector, Verbatim
from tandem.protocol.checkpoints import Patch
from tandem.protocol.parallel import ParallelSummary
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
    settings: dict[str, object]
    settings_warnings: list[str]
    """Settings that do not apply: untrusted project keys, invalid files."""
    remote: dict[str, object] | None = None
    """Where the session executes when attached to an agent-server (its target: host,
    url, working dir), else nil: local."""


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


class HistoryParams(Params):
    """``session``'s last ``limit`` entries before seq ``before`` (the newest without it), compact.

    Each entry is a vector ``[SEQ TYPE TURN TS TEXT REST]``: REST a plist of
    the entry's other fields as written (nil when none), TURN, TS or TEXT nil
    when the entry has none. For a view that renders many turns at once.
    """

    session: str
    before: int | None = Field(default=None, ge=1)
    limit: int = Field(default=10000, ge=1, le=100000)


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


class RevertedPart(Reply):
    """A hunk (or, with no hunk, a whole file) of a turn's patch that a review reverted."""

    path: str
    hunk: int | None = None
    """The hunk's index among the file's hunks (0 is the first); None: the whole file."""


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
    reverted: list[RevertedPart] = Field(default_factory=list)
    """The parts of the patch reviews reverted since, oldest first."""


class TurnsParams(Params):
    """``sessions/turns``: the turns of ``session``, oldest first, for choosing one.

    ``last`` keeps only the newest LAST rows (after ``hide_rewound``), so a
    caller that wants the latest turns of a long history does not pay for
    every row; ``hide_rewound`` leaves out the turns a rewind hid.
    """

    session: str = SessionId
    last: int | None = Field(default=None, ge=1, le=100_000)
    hide_rewound: bool = False


class TurnRow(Reply):
    """One turn of a session, as a prompt offers it."""

    turn: int
    origin: str
    """``chat`` or ``directive``."""
    request: str
    """The first line of the request, cut to 80 characters."""
    outcome: str | None = None
    """``succeeded``, ``failed`` or ``aborted``; None while the turn runs."""
    files: list[str] = Field(default_factory=list)
    """The paths its patch touched."""
    rewound: bool = False
    """True when a rewind no undo cancelled hid the turn."""


class Turns(Reply):
    """The turns of one session, oldest first."""

    session: str
    turns: list[TurnRow] = Field(default_factory=list)


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
    """``remote`` (an agent-server), ``acp`` (an agent process) or ``native`` (tandem's
    own loop); "" before a turn of a local session."""
    host: str | None = None
    """The agent-server's name in ``tandem-remote-hosts`` (engine ``remote``)."""
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    damaged: str | None = None
    project: str = ""
    """The project the row is grouped under: its cwd, or a parallel session's project."""
    parallel: ParallelSummary | None = None
    """A parallel session's tree, base, landing state and change."""


class Overview(Reply):
    """Every session, those waiting for the user first."""

    rows: list[OverviewRow] = Field(default_factory=list)


# -- compaction ----------------------------------------------------------------


class CompactReply(Reply):
    """What a compaction recorded."""

    session: str
    seq: int
    """Seq of the ``compaction`` entry."""
    first_kept_turn: int
    tokens_before: int
    tokens_after: int
    provider: str
    acp_session_id: str | None = None
    """For an agent's root chat (ACP): the new, seeded conversation."""


class StatusReply(Reply):
    """The projected context against the model's window."""

    session: str
    provider: str | None
    tokens: int
    window: int | None
    threshold: float | None
    limit: int | None
    auto: bool
    would_compact: bool
    compacting: bool
    latest: dict[str, object] | None
    """The latest ``compaction`` entry (seq, first_kept_turn, token counts), if any."""


# -- rewind and its undo ----------------------------------------------------------


GapKind = Literal[
    "gap-at-checkpoint",
    "gap-now",
    "not-captured-now",
    "skipped-file-changed",
    "ran-shell",
    "wrote-outside",
    "no-patch",
    "no-end-state",
]


class _Model(BaseModel):
    """A frozen reply record (rewind plans and results)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DiscardedTurn(_Model):
    """A turn the rewind hides: its number, origin, request and outcome."""

    turn: int
    origin: str
    request: str = ""
    """First line of the request (for a directive: of its exact prompt)."""
    outcome: str | None = None
    """None while it has no ``turn_end``."""
    provider: str = ""
    directive: str | None = None
    files: list[str] = Field(default_factory=list)
    completeness: str | None = None


class DiscardedAttempt(_Model):
    """A directive turn among the discarded ones (an attempt or a discussion turn)."""

    turn: int
    workspace: str
    directive: str
    action: str
    attempt: int | None = None
    """The attempt number; None for a discussion turn."""


class KnownGap(_Model):
    """Something the rewind cannot put back exactly, or does not know about."""

    kind: GapKind
    path: str | None = None
    detail: str = ""
    turn: int | None = None


class ExternalChange(_Model):
    """A file changed by something other than tandem after a discarded turn began."""

    path: str
    when: str
    """``since turn K ended`` or ``between turns K and K+1``."""


class RewindPlan(_Model):
    """What a rewind before ``before_turn`` would do now (for the user to confirm)."""

    session: str
    before_turn: int
    root: str
    checkpoint: str
    """The pre-turn checkpoint of ``before_turn``: the state the files go back to."""
    expected_after: str | None
    """The checkpoint at the end of the newest visible turn (what tandem last left)."""
    current_tree: str
    journal_seq: int
    to_restore: list[str] = Field(default_factory=list)
    to_delete: list[str] = Field(default_factory=list)
    changed_externally: list[ExternalChange] = Field(default_factory=list)
    turns: list[DiscardedTurn] = Field(default_factory=list)
    attempts: list[DiscardedAttempt] = Field(default_factory=list)
    gaps: list[KnownGap] = Field(default_factory=list)
    diff: str = ""
    """Unified diff from the files now to the checkpoint (what the restore does)."""
    diff_truncated: bool = False
    acp_reset: bool = False
    """The root chat's ACP conversation saw discarded turns and starts afresh."""
    digest: str = ""
    """Guard token: `rewind` refuses (``stale``) when the plan differs from this one."""


class RestoreDone(_Model):
    """What a completed rewind, or undo of one, did to the files and the turns."""

    session: str
    before_turn: int
    seq: int
    """Seq of the entry written (``rewind`` or ``rewind_undo``)."""
    checkpoint: str
    backup: str
    """Checkpoint of the files as they were just before the restore."""
    restored: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    turns: list[int] = Field(default_factory=list)
    acp_reset: bool = False


class RemotePutBack(_Model):
    """What a rewind of a remote session did on its agent-server.

    ``failed`` lists files not put back on the server (they are pushed
    again before the session's next turn); ``conversation_error`` says why
    the conversation was not moved back, when it was not.
    """

    host: str
    uploaded: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    conversation_id: str | None = None
    event_id: str | None = None
    """The conversation's HEAD after the rewind (None: before its first event)."""
    conversation_error: str | None = None


class RewindResult(RestoreDone):
    """What a completed rewind did."""

    remote: RemotePutBack | None = None
    """For a session with a remote target: the server side of the rewind."""


class UndoPlan(_Model):
    """What undoing the latest rewind would do now (for the user to confirm)."""

    session: str
    rewind_seq: int
    """Seq of the ``rewind`` entry this undo cancels."""
    before_turn: int
    root: str
    checkpoint: str
    """The rewind's backup: the state the files go back to."""
    expected_after: str
    """The rewind's target checkpoint: the state the rewind left the files in."""
    current_tree: str
    journal_seq: int
    files_only: bool = False
    """Only the files go back; the turns stay rewound (no turn returns)."""
    to_restore: list[str] = Field(default_factory=list)
    to_delete: list[str] = Field(default_factory=list)
    changed_externally: list[ExternalChange] = Field(default_factory=list)
    """Files changed since the rewind by something other than it: the undo overwrites them."""
    turns: list[DiscardedTurn] = Field(default_factory=list)
    """The turns that come back (none with ``files_only``)."""
    attempts: list[DiscardedAttempt] = Field(default_factory=list)
    """The directive attempts that come back."""
    later_turns: list[int] = Field(default_factory=list)
    """Turns that ran after the rewind: they block a full undo (except a resent turn)."""
    takes_back: list[DiscardedTurn] = Field(default_factory=list)
    """The rewind was an edit-and-resend's (``turns/resend``): its resent turn, which the
    undo hides again (the entry's ``hides_from``)."""
    refusal: str | None = None
    """Why a full undo is refused (None: allowed); ``files_only`` is still possible."""
    gaps: list[KnownGap] = Field(default_factory=list)
    diff: str = ""
    diff_truncated: bool = False
    acp_reset: bool = False
    """The root chat's agent conversation starts afresh, seeded from the projection."""
    digest: str = ""


class UndoResult(RestoreDone):
    """What a completed undo did (its backup: the files just before it)."""

    rewind_seq: int
    files_only: bool = False


class RenameParams(Params):
    """Give ``session`` the title ``title`` (one line; control characters are dropped)."""

    session: str = SessionId
    title: str = Field(max_length=2000)


class RenameReply(Reply):
    """The title as stored (cleaned)."""

    session: str
    title: str


class ForkParams(Params):
    """``sessions/fork``: a new session whose conversation is ``session``'s up to ``turn``."""

    session: str = SessionId
    turn: int = Field(ge=1)
    """The last turn the fork keeps (included)."""


class ForkedFrom(Reply):
    """Where a forked session came from (its header's ``forked_from``)."""

    session: str
    turn: int


class ForkReply(SessionInfo):
    """The new, active session, and where it came from."""

    forked_from: ForkedFrom


class SessionRow(Reply):
    """One session of ``sessions/list``."""

    id: str
    path: str
    cwd: str
    cwd_exists: bool
    title: str
    created: str
    last_activity: str
    """Timestamp of the last entry (the creation time for an empty session)."""
    last_seq: int
    previous_files: list[str]
    damaged: str | None = None
    """Why the journal cannot be opened (None for a sound one)."""


class SessionList(RootModel[list[SessionRow]]):
    """``sessions/list``: sessions, most recent activity first."""


class LookupReply(Reply):
    """``sessions/lookup``: a session found, and the relocation question when its cwd is gone."""

    id: str
    path: str
    cwd: str
    cwd_exists: bool
    title: str
    prompt: str | None


class Relocated(Reply):
    """``sessions/relocate``: the moved session's identity facts."""

    id: str
    path: str
    cwd: str
    previous_files: list[str]


class WrittenEntry(RootModel[dict[str, Any]]):
    """A journal entry as written: ``:type``, ``:seq``, ``:ts``, maybe ``:turn``, its fields.

    An entry's fields are its type's (docs/architecture.md, Journal): the
    wire carries the JSON object the journal holds.
    """


class EntriesPage(Reply):
    """``sessions/entries``: a page of entries as written, and the journal's last seq."""

    session: str
    entries: list[dict[str, Any]]
    """Each as written (see `WrittenEntry`)."""
    last_seq: int


class HistoryPage(Verbatim):
    """``sessions/history``: entries as positional vectors, kept printed when they can be."""

    session: str
    entries: Printed | list[Vector]
    last_seq: int


class UsageCounts(Reply):
    """Token counts summed over some turns."""

    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class ProviderUsageCounts(UsageCounts):
    """The totals of the turns one provider ran."""

    provider: str
    model: str = ""


class InstructionFile(Reply):
    """A project instruction file a session's next request carries."""

    path: str
    size: int


class UsageReport(Reply):
    """``sessions/usage``: token totals, overall and per provider, the provider, the title,
    and the project instruction files."""

    total: UsageCounts
    by_provider: list[ProviderUsageCounts]
    provider: str | None
    """The provider the session chose, else the one its next turn would use."""
    chosen: bool
    title: str
    instructions: list[InstructionFile] = []
