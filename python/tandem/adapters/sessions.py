"""Session methods (``sessions/…``): open and switch sessions, entries, compaction, rewind.

Each handler makes one call into the sessions, compaction, rewind, overview
or usage services (see `tandem.sessions.requests` for the relocation
question Emacs asks between ``sessions/lookup`` and ``sessions/resume``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.history.turn_patch import turn_patch as patch_of
from tandem.history.turn_patch import turn_rows
from tandem.overview.rows import overview as overview_of
from tandem.protocol import sexp
from tandem.protocol.base import MethodSpec, Nothing, Vector
from tandem.protocol.sessions import (
    CloseParams,
    CompactParams,
    CompactReply,
    ContinueParams,
    CurrentParams,
    EntriesPage,
    EntriesParams,
    ForkedFrom,
    ForkParams,
    ForkReply,
    HistoryPage,
    HistoryParams,
    ListParams,
    LookupParams,
    LookupReply,
    NewParams,
    OpenFileParams,
    Overview,
    OverviewParams,
    PlanParams,
    Relocated,
    RelocateParams,
    RenameParams,
    RenameReply,
    ResumeParams,
    RewindParams,
    RewindPlan,
    RewindResult,
    SessionInfo,
    SessionList,
    SessionOnlyParams,
    SessionRow,
    StatusParams,
    StatusReply,
    SwitchParams,
    TurnPatch,
    TurnPatchParams,
    Turns,
    TurnsParams,
    UndoParams,
    UndoPlan,
    UndoPlanParams,
    UndoResult,
    UsageParams,
    UsageReport,
)
from tandem.protocol.turns import Cancelled
from tandem.sessions import requests
from tandem.sessions.fork import fork as fork_session
from tandem.sessions.history import HistoryRows, Row
from tandem.sessions.manager import Active
from tandem.sessions.requests import absolute_dir, info
from tandem.sessions.titles import user_title
from tandem.turns.engine import run_blocking
from tandem.turns.usage import usage_report

if TYPE_CHECKING:
    from tandem.app import App


async def list_sessions(app: App, p: ListParams) -> SessionList:
    """Sessions, most recent activity first."""
    cwd = None if p.all or not p.cwd else absolute_dir(p.cwd)
    return SessionList([SessionRow.model_validate(s.model_dump())
                        for s in app.sessions.manager.list(cwd)])


def _info(app: App, active: Active) -> SessionInfo:
    return info(app.sessions, app.remote.target_or_none, active)


async def new(app: App, p: NewParams) -> SessionInfo:
    """Create an empty session and make it active."""
    return _info(app, app.sessions.manager.new(absolute_dir(p.cwd), p.title))


async def fork(app: App, p: ForkParams) -> ForkReply:
    """Start a new session (made active) whose conversation is SESSION's up to TURN."""
    described = _info(app, fork_session(app.sessions, p.session, p.turn))
    return ForkReply(**described.model_dump(),
                     forked_from=ForkedFrom(session=app.sessions.journal(p.session).id,
                                            turn=p.turn))


async def lookup(app: App, p: LookupParams) -> LookupReply:
    """Id, journal, recorded cwd, whether it still exists, and the relocation question."""
    return LookupReply.model_validate(requests.lookup(app.sessions, p.query, p.cwd))


async def resume(app: App, p: ResumeParams) -> SessionInfo:
    """Resume by id; a lost directory needs ``relocate`` (t moves, nil cancels)."""
    return _info(app, requests.resume(app.sessions, p.query, p.cwd, p.relocate))


async def open_file(app: App, p: OpenFileParams) -> SessionInfo:
    """Open a journal file; never moves it (active cwd falls back to ``cwd``)."""
    return _info(app, app.sessions.manager.open_file(p.path, absolute_dir(p.cwd)))


async def switch(app: App, p: SwitchParams) -> SessionInfo:
    """Switch sessions; keeps the active directory when the target's is gone."""
    return _info(app, app.sessions.manager.switch(p.target))


async def continue_(app: App, p: ContinueParams) -> SessionInfo:
    """Continue: this project's latest session, else re-root a lost breadcrumb, else new."""
    return _info(app, app.sessions.manager.continue_recent(absolute_dir(p.cwd)))


async def current(app: App, p: CurrentParams) -> SessionInfo | None:
    """The active session, or nil."""
    active = app.sessions.manager.current
    return _info(app, active) if active else None


async def entries(app: App, p: EntriesParams) -> EntriesPage:
    """Entries as written, with the journal's last seq (for gap detection)."""
    return EntriesPage.model_validate(
        requests.entries_page(app.sessions, p.session, p.after, p.before, p.limit))


def _print_row(row: Row) -> str:
    return sexp.dumps(Vector(row))


class PrintedRows(HistoryRows):
    """History rows kept printed as the vectors Emacs reads (one print per entry, ever)."""

    def __init__(self) -> None:
        super().__init__(_print_row)


async def history(app: App, p: HistoryParams) -> HistoryPage:
    """Entries as positional vectors: what a view renders, at a fraction of the cost."""
    # Not validated: thousands of rows, already typed by the page (`Printed` or `Vector`s).
    page = requests.history_page(app.sessions, p.session, p.before, p.limit, PrintedRows)
    return HistoryPage.model_construct(None, **page)


async def relocate(app: App, p: RelocateParams) -> Relocated:
    """Move a session not open here; refused while another process holds it."""
    return Relocated.model_validate(requests.relocate(app.sessions, p.target, p.cwd))


async def close(app: App, p: CloseParams) -> Nothing:
    """Close one session: stop its providers (ACP agent processes), release its lock.

    Refused while a turn runs in it: cancel the turn first.
    """
    await app.turns.close(p.session)
    return Nothing()


async def compact(app: App, p: CompactParams) -> CompactReply:
    """Compact a session now."""
    return await app.compactions.compact(p.session, p.provider)


async def compact_cancel(app: App, p: SessionOnlyParams) -> Cancelled:
    """Cancel the compaction of a session; it ends leaving the session unchanged."""
    return Cancelled(cancelled=app.compactions.cancel(p.session))


async def compaction_status(app: App, p: StatusParams) -> StatusReply:
    """The projected context size against the window and the threshold."""
    return app.compactions.status(p.session, p.provider)


async def rewind_plan(app: App, p: PlanParams) -> RewindPlan:
    """What rewinding before a turn would do."""
    return await app.rewinds.plan(p.session, p.turn)


async def rewind(app: App, p: RewindParams) -> RewindResult:
    """Rewind before a turn as planned."""
    return await app.rewinds.rewind(p.session, p.turn, p.digest)


async def rewind_undo_plan(app: App, p: UndoPlanParams) -> UndoPlan:
    """What undoing the latest rewind would do."""
    return await app.rewinds.undo.plan(p.session, p.files_only)


async def rewind_undo(app: App, p: UndoParams) -> UndoResult:
    """Undo the latest rewind as planned."""
    return await app.rewinds.undo.undo(p.session, p.digest, p.files_only)


async def turn_patch(app: App, p: TurnPatchParams) -> TurnPatch:
    """One turn's patch, to the files now while it runs."""
    return await patch_of(app.sessions, app.turns.engine, app.checkpoints, app.rewinds,
                          p.session, p.turn)


async def turns(app: App, p: TurnsParams) -> Turns:
    """The turns of a session, for a prompt to offer."""
    return turn_rows(app.sessions, p.session, p.last, p.hide_rewound)


async def overview(app: App, p: OverviewParams) -> Overview:
    """Every session with its live state."""
    attached = app.remote.attached()

    def host_of(session: str) -> str | None:
        target = app.remote.target_or_none(session) if session in attached else None
        return target.host if target is not None else None

    parallel = await run_blocking(app.parallel.summaries)  # git: off the event loop
    return overview_of(app.sessions, app.turns.engine, app.overview_facts, p.cwd, host_of,
                       parallel)


async def usage(app: App, p: UsageParams) -> UsageReport:
    """SESSION's token totals, overall and per provider, and its title."""
    return usage_report(app.sessions, p.session)


async def rename(app: App, p: RenameParams) -> RenameReply:
    """Give SESSION a title of the user's; the overview and the pickers show it."""
    journal = app.sessions.journal(p.session)
    header = journal.update_header(title=user_title(p.title))
    return RenameReply(session=journal.id, title=header.title)


METHODS: list[MethodSpec] = [
    MethodSpec("sessions/list", ListParams, list_sessions, "List sessions, newest first."),
    MethodSpec("sessions/new", NewParams, new, "Create a session.", SessionInfo),
    MethodSpec("sessions/fork", ForkParams, fork,
               "Start a new session whose conversation is another's up to a turn "
               "(files untouched; its header records forked_from).", ForkReply),
    MethodSpec("sessions/lookup", LookupParams, lookup, "Find a session by id or prefix."),
    MethodSpec("sessions/resume", ResumeParams, resume, "Resume by id.", SessionInfo),
    MethodSpec(
        "sessions/open-file", OpenFileParams, open_file, "Open a journal file.", SessionInfo
    ),
    MethodSpec("sessions/switch", SwitchParams, switch, "Switch sessions.", SessionInfo),
    MethodSpec("sessions/continue", ContinueParams, continue_, "Continue here.", SessionInfo),
    MethodSpec("sessions/current", CurrentParams, current, "The active session."),
    MethodSpec("sessions/entries", EntriesParams, entries, "A page of entries."),
    MethodSpec("sessions/history", HistoryParams, history,
               "Many entries, each a vector [SEQ TYPE TURN TS TEXT REST] (REST: a plist of "
               "the other fields as written, nil when none), for a view."),
    MethodSpec("sessions/relocate", RelocateParams, relocate, "Re-root a session."),
    MethodSpec("sessions/close", CloseParams, close, "Close a session."),
    MethodSpec("sessions/compact", CompactParams, compact,
               "Summarise older chat turns into a compaction entry.", CompactReply),
    MethodSpec("sessions/compact-cancel", SessionOnlyParams, compact_cancel,
               "Cancel a running compaction (the session stays unchanged)."),
    MethodSpec("sessions/compaction-status", StatusParams, compaction_status,
               "Context size against the model's window and the threshold.", StatusReply),
    MethodSpec("sessions/rewind-plan", PlanParams, rewind_plan,
               "What a rewind before a turn would do (files, turns, attempts, gaps).",
               RewindPlan),
    MethodSpec("sessions/rewind", RewindParams, rewind,
               "Rewind before a turn as planned: restore files, then one rewind entry.",
               RewindResult),
    MethodSpec("sessions/rewind-undo-plan", UndoPlanParams, rewind_undo_plan,
               "What undoing the latest rewind would do (files, turns returning, refusal).",
               UndoPlan),
    MethodSpec("sessions/rewind-undo", UndoParams, rewind_undo,
               "Undo the latest rewind as planned: files back, then one rewind_undo entry.",
               UndoResult),
    MethodSpec("sessions/turn-patch", TurnPatchParams, turn_patch,
               "One turn's patch with its unified diff.", TurnPatch),
    MethodSpec("sessions/turns", TurnsParams, turns,
               "A session's turns, oldest first: request, outcome, files changed, rewound.",
               Turns),
    MethodSpec("sessions/overview", OverviewParams, overview,
               "Every session with its live state (waiting for you first).", Overview),
    MethodSpec("sessions/usage", UsageParams, usage, "Token totals of a session."),
    MethodSpec("sessions/rename", RenameParams, rename, "Give a session a title.", RenameReply),
]
