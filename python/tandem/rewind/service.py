"""Rewind before turn N: plan it, then one transaction (files, then journal).

`RewindService.rewind` holds the session in the gate (no turn, compaction
or other rewind meanwhile), restores the files through the checkpointer
(whose own transaction puts every file back when one fails), then appends
ONE ``rewind`` entry and fsyncs it. When the restore fails no entry is
written; when the entry cannot be written the files are put back. Journal
bytes are never rewritten: the projection, the view and the directives
derive from the rewind entry which turns are hidden. Across a crash the two
halves stay one unit: an intent is recorded before any file moves and
removed once the entry is synced; a left one is settled by
`tandem.rewind.recovery` (the entry is the commit point: without
it the files go back to the backup). The plan itself is
`tandem.rewind.plan` (pure).

Refusals: ``busy`` (a turn, a compaction or another rewind is in flight),
``not-found`` (no such turn, or already rewound), ``no-checkpoint`` (the turn
recorded none, or it is not in this workspace's store), ``compaction`` (the
latest compaction summarised the turn), ``read-only``, ``stale``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tandem import faults
from tandem.checkpoints.service import CheckpointService
from tandem.events import EventSink
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import RestoreResult, RestoreStart
from tandem.protocol.events import EntryEvent
from tandem.protocol.sessions import DiscardedTurn, RewindPlan, RewindResult
from tandem.providers.registry import keeps_conversation
from tandem.rewind.plan import build_plan
from tandem.rewind.recovery import (
    Recovery,
    RecoveryReport,
    drop_intent,
    recover,
    recover_all,
    recover_on_open,
    write_intent,
)
from tandem.rewind.remote import forget_push, record_push
from tandem.rewind.remote import put_back as put_back_remote
from tandem.rewind.restore_back import put_back
from tandem.rewind.undo import RewindUndo
from tandem.sessions.gate import SessionGate, writable_root
from tandem.sessions.service import SessionService
from tandem.store.journal import Journal
from tandem.store.layout import rewind_intent_path
from tandem.store.models import entry_to_dict
from tandem.turns.engine import TurnSpec, run_blocking
from tandem.turns.service import TurnService

if TYPE_CHECKING:
    from tandem.remote.checkpoints import RemoteCheckpoints

log = logging.getLogger("tandem.rewind")

FileHook = Callable[[str], None]


class RewindService:
    """The backend's rewinds and their crash recovery (see the module doc)."""

    def __init__(self, events: EventSink, sessions: SessionService, turns: TurnService,
                 checkpoints: CheckpointService, gate: SessionGate,
                 remote: RemoteCheckpoints | None = None) -> None:
        self.events = events
        self.remote = remote
        """Mirrors of remote workspaces: a remote session rewinds its mirror, then the server."""
        self.sessions = sessions
        self.turns = turns
        self.checkpoints = checkpoints
        self.gate = gate
        self.recovery = Recovery(sessions.home, checkpoints, events)
        """What settling a rewind a crash interrupted needs."""
        self.undo = RewindUndo(self)
        """Undoing the latest rewind (`tandem.rewind.undo`)."""

    def recover_on_open(self, journal: Journal) -> None:
        """`SessionManager` hook: settle JOURNAL's left rewind as it is opened."""
        recover_on_open(self.recovery, journal)

    def recover_all(self) -> list[RecoveryReport]:
        """Settle every left rewind under the home (at backend start; blocking)."""
        return recover_all(self.recovery)

    async def plan(self, session: str, before_turn: int) -> RewindPlan:
        """The impact plan of a rewind before BEFORE_TURN of SESSION (an id or unique prefix)."""
        journal = self.sessions.journal(session)
        if not journal.writable:
            raise TandemError("read-only", journal.read_only_reason or "session is read-only")
        self.gate.check_free(journal.id, "rewind")
        await self.sync_remote(journal)
        return await self._plan(journal, before_turn)

    def is_remote(self, journal: Journal) -> bool:
        """True when JOURNAL's session has a remote target (its files are on a server)."""
        return self.remote is not None and self.remote.remote.target(journal.id) is not None

    async def sync_remote(self, journal: Journal) -> None:
        """For a remote session: bring its mirror up to date (the plan is made on it)."""
        if self.remote is not None and self.is_remote(journal):
            await self.remote.sync(journal.id)

    def checkpoint_root(self, journal: Journal) -> Path:
        """The root JOURNAL's checkpoints are of: the project, or a remote session's mirror."""
        if self.remote is not None and self.is_remote(journal):
            return self.remote.mirror(journal.id).ensure()
        return self.sessions.root_of(journal)

    def root(self, journal: Journal) -> Path:
        """`checkpoint_root`, after the checks every writer makes (writable, exists)."""
        return writable_root(journal, self.checkpoint_root(journal))

    async def _plan(self, journal: Journal, before_turn: int) -> RewindPlan:
        root = self.root(journal)
        cp = self.checkpoints.for_root(root)
        if rewind_intent_path(journal.path).exists():  # a crash left one: settle it first
            await run_blocking(recover, self.recovery, journal, self.sessions.entries(journal))
        seq = journal.last_seq
        entries = self.sessions.entries(journal)
        plan: RewindPlan = await run_blocking(build_plan, cp, journal.id, entries, seq,
                                              before_turn, self.sessions.index(journal))
        return plan

    async def rewind(self, session: str, before_turn: int, digest: str | None,
                     *, before_file: FileHook | None = None,
                     resend: bool = False) -> RewindResult:
        """Rewind SESSION before BEFORE_TURN, as planned with DIGEST (None: no guard).

        BEFORE_FILE is the checkpointer's fault-injection seam (tests only).
        RESEND marks the entry as the first half of an edit-and-resend
        (`tandem.rewind.resend`): its undo then takes the resent turn back.
        """
        if digest is not None and (not isinstance(digest, str) or len(digest) != 64):
            raise TandemError("invalid", f"not a plan digest: {digest!r}")
        journal = self.sessions.journal(session)
        # No turn may start while the files are restored and the entry written.
        async with self.gate.hold(journal.id, "rewind"):
            return await self._rewind(journal, before_turn, digest, before_file, resend)

    async def _rewind(self, journal: Journal, before_turn: int, digest: str | None,
                      before_file: FileHook | None, resend: bool = False) -> RewindResult:
        sid = journal.id
        if not journal.writable:
            raise TandemError("read-only", journal.read_only_reason or "session is read-only")
        await self.sync_remote(journal)
        plan = await self._plan(journal, before_turn)
        if digest is not None and plan.digest != digest:
            raise TandemError("stale", "The workspace or the session changed since this rewind "
                              "was planned; look at the new plan and confirm again")
        if journal.last_seq != plan.journal_seq:
            raise TandemError("stale",
                              "The session changed while the rewind was planned; plan again")
        cp = self.checkpoints.for_root(plan.root)
        turns_hidden = [t.turn for t in plan.turns]

        remote = self.remote if self.is_remote(journal) else None

        def record_intent(start: RestoreStart) -> None:
            if remote is not None:  # what the server must get; harmless if the restore rolls back
                record_push(remote, sid, [*plan.to_restore, *plan.to_delete])
            # Durable before any file moves: a crash from here on is settled on restart.
            write_intent(journal, plan.journal_seq, before_turn, plan.root, turns_hidden, start)

        try:
            done: RestoreResult = await run_blocking(
                lambda: cp.restore(plan.checkpoint, expected_current=plan.current_tree,
                                   before_file=before_file, on_start=record_intent))
        except OSError as e:  # the intent could not be recorded: nothing moved
            drop_intent(journal.path)
            raise TandemError("io", f"Cannot record the rewind before it starts ({e.strerror}); "
                              "nothing was restored") from e
        except TandemError as e:
            if not cp.layout.pending.exists():  # files as before (rolled back, or never moved)
                drop_intent(journal.path)
                if remote is not None:
                    forget_push(remote, sid)
            if e.code == "conflict":
                raise TandemError("stale", "Files changed since this rewind was planned; "
                                  "nothing was restored. Look at the new plan and confirm "
                                  "again") from e
            raise  # restore-failed: the checkpointer put every file back; no entry is written
        try:
            if journal.last_seq != plan.journal_seq:
                raise TandemError("busy", "A turn started while the files were being restored; "
                                  "the files were put back and the session is unchanged")
            faults.point("rewind.restored")
            entry = journal.append({
                "type": "rewind", "before_turn": before_turn, "checkpoint": plan.checkpoint,
                "backup": done.backup.id, "restored": done.restored, "deleted": done.deleted,
                "turns": turns_hidden, "acp_reset": plan.acp_reset,
                **({"resend": True} if resend else {})})
        except BaseException:
            await put_back(cp, done)
            drop_intent(journal.path)  # files as before; a failed put-back keeps it for recovery
            raise
        try:
            faults.point("rewind.entry")
            journal.sync()
        except OSError as e:  # the entry is written; its durability is in doubt: keep the intent
            raise TandemError("io", f"Rewind written but not synced to disk: {e.strerror}") from e
        drop_intent(journal.path)
        self.events.publish(sid, EntryEvent(entry=entry_to_dict(entry)))
        if plan.acp_reset:
            await self.reset_conversations(journal, plan.turns)
        pushed = (await put_back_remote(remote, sid, self.sessions.entries(journal), plan.turns)
                  if remote is not None else None)
        log.info("rewound %s before turn %d (%d restored, %d deleted)", sid, before_turn,
                 len(done.restored), len(done.deleted))
        return RewindResult(session=sid, before_turn=before_turn, seq=entry.seq,
                            checkpoint=plan.checkpoint, backup=done.backup.id,
                            restored=done.restored, deleted=done.deleted,
                            turns=[t.turn for t in plan.turns], acp_reset=plan.acp_reset,
                            remote=pushed)

    async def reset_conversations(self, journal: Journal, turns: Sequence[DiscardedTurn]
                                  ) -> None:
        """Make the root chat's agent conversation start afresh, seeded from the projection.

        The agent's conversation still holds the discarded turns. The session's
        providers are stopped, and each provider the root chat used that keeps
        a conversation is rebuilt and told to open a new one on its next turn
        (the journal's rewind entry carries ``acp_reset`` for a backend that
        starts later).
        """
        await self.turns.close_session(journal.id)
        names = {t.provider for t in turns if t.directive is None}
        for name in sorted(n for n in names if keeps_conversation(n)):
            try:
                provider = self.turns.provider(TurnSpec(session=journal.id, text="(rewind)",
                                                        provider=name), journal)
            except TandemError as e:  # no longer configured: nothing runs to reset
                log.info("no provider %s to reset after a rewind: %s", name, e.message)
                continue
            provider.reset_conversation(None)

