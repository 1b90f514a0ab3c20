"""Undo the latest Rewind: one transaction (files, then journal), as Rewind is.

`RewindUndo.undo` holds the session in the gate, recomputes the plan
(`tandem.rewind.undo_plan`, pure) and refuses when it differs from the
one confirmed (``stale``) or when turns ran after the rewind
(``later-turns``; ``files_only`` is then allowed). It restores the files to
the rewind's backup checkpoint through the checkpointer (all or nothing),
recording an intent of kind ``rewind_undo`` before any file moves, then
appends ONE ``rewind_undo`` entry and fsyncs it: that entry is the commit
point, and `tandem.rewind.recovery` settles a crash in between
exactly as for a rewind (no entry: the files go back to the undo's own
backup). The entry cancels the rewind entry; nothing is rewritten.

An ACP root chat the rewind reset (``acp_reset``) cannot get its old agent
conversation back: the undo resets it again, so its next turn opens a new
conversation seeded from the projection, which now holds the returned turns.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tandem import faults
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import RestoreResult, RestoreStart
from tandem.protocol.events import EntryEvent
from tandem.protocol.sessions import UndoPlan, UndoResult
from tandem.rewind.recovery import drop_intent, recover, write_intent
from tandem.rewind.remote import forget_push, record_push
from tandem.rewind.remote import put_back as put_back_remote
from tandem.rewind.restore_back import put_back
from tandem.rewind.undo_plan import build_undo_plan
from tandem.store.journal import Journal
from tandem.store.layout import rewind_intent_path
from tandem.store.models import entry_to_dict
from tandem.turns.engine import run_blocking

if TYPE_CHECKING:
    from tandem.rewind.service import FileHook, RewindService

log = logging.getLogger("tandem.rewind")


class RewindUndo:
    """Undoing a session's latest rewind (see the module doc); part of `RewindService`."""

    def __init__(self, rewinds: RewindService) -> None:
        self.rewinds = rewinds

    async def plan(self, session: str, files_only: bool = False) -> UndoPlan:
        """The impact plan of undoing SESSION's latest rewind (FILES_ONLY: files alone)."""
        journal = self.rewinds.sessions.journal(session)
        if not journal.writable:
            raise TandemError("read-only", journal.read_only_reason or "session is read-only")
        self.rewinds.gate.check_free(journal.id, "rewind")
        await self.rewinds.sync_remote(journal)
        return await self._plan(journal, files_only)

    async def _plan(self, journal: Journal, files_only: bool) -> UndoPlan:
        rw = self.rewinds
        root = rw.root(journal)  # a remote session's mirror, else the project
        cp = rw.checkpoints.for_root(root)
        if rewind_intent_path(journal.path).exists():  # a rewind or undo a crash interrupted
            await run_blocking(recover, rw.recovery, journal, rw.sessions.entries(journal))
        plan: UndoPlan = await run_blocking(build_undo_plan, cp, journal.id,
                                            rw.sessions.entries(journal), journal.last_seq,
                                            files_only)
        return plan

    async def undo(self, session: str, digest: str | None, files_only: bool = False,
                   *, before_file: FileHook | None = None) -> UndoResult:
        """Undo SESSION's latest rewind as planned with DIGEST (None: no guard).

        BEFORE_FILE is the checkpointer's fault-injection seam (tests only).
        """
        journal = self.rewinds.sessions.journal(session)
        async with self.rewinds.gate.hold(journal.id, "rewind"):
            return await self._undo(journal, digest, files_only, before_file)

    async def _undo(self, journal: Journal, digest: str | None, files_only: bool,
                    before_file: FileHook | None) -> UndoResult:
        if not journal.writable:
            raise TandemError("read-only", journal.read_only_reason or "session is read-only")
        await self.rewinds.sync_remote(journal)
        plan = await self._plan(journal, files_only)
        if plan.refusal is not None:
            raise TandemError("later-turns", f"Cannot undo the rewind before turn "
                              f"{plan.before_turn}: {plan.refusal}",
                              {"later_turns": plan.later_turns})
        if digest is not None and plan.digest != digest:
            raise TandemError("stale", "The workspace or the session changed since this undo "
                              "was planned; look at the new plan and confirm again")
        cp = self.rewinds.checkpoints.for_root(plan.root)
        returning = [t.turn for t in plan.turns]

        remote = self.rewinds.remote if self.rewinds.is_remote(journal) else None

        def record_intent(start: RestoreStart) -> None:
            if remote is not None:  # the server gets the files after the entry is durable
                record_push(remote, journal.id, [*plan.to_restore, *plan.to_delete])
            write_intent(journal, plan.journal_seq, plan.before_turn, plan.root, returning,
                         start, kind="rewind_undo")

        try:
            done: RestoreResult = await run_blocking(
                lambda: cp.restore(plan.checkpoint, expected_current=plan.current_tree,
                                   before_file=before_file, on_start=record_intent))
        except OSError as e:
            drop_intent(journal.path)
            raise TandemError("io", f"Cannot record the undo before it starts ({e.strerror}); "
                              "nothing was restored") from e
        except TandemError as e:
            if not cp.layout.pending.exists():
                drop_intent(journal.path)
                if remote is not None:
                    forget_push(remote, journal.id)
            if e.code == "conflict":
                raise TandemError("stale", "Files changed since this undo was planned; nothing "
                                  "was restored. Look at the new plan and confirm again") from e
            raise
        try:
            if journal.last_seq != plan.journal_seq:
                raise TandemError("busy", "The session changed while the files were being "
                                  "restored; the files were put back and the session is unchanged")
            faults.point("undo.restored")
            entry = journal.append({
                "type": "rewind_undo", "rewind_seq": plan.rewind_seq,
                "before_turn": plan.before_turn, "checkpoint": plan.checkpoint,
                "backup": done.backup.id, "restored": done.restored, "deleted": done.deleted,
                "turns": returning, "files_only": files_only, "acp_reset": plan.acp_reset,
                **({"hides_from": plan.takes_back[0].turn} if plan.takes_back else {})})
        except BaseException:
            await put_back(cp, done, "undo")
            drop_intent(journal.path)
            raise
        try:
            journal.sync()
        except OSError as e:
            raise TandemError("io", f"Undo written but not synced to disk: {e.strerror}") from e
        drop_intent(journal.path)
        self.rewinds.events.publish(journal.id, EntryEvent(entry=entry_to_dict(entry)))
        if plan.acp_reset:
            await self.rewinds.reset_conversations(journal, plan.turns)
        if remote is not None:  # files only: the conversation keeps its rewound HEAD
            pushed = await put_back_remote(remote, journal.id, [], [])
            if pushed is not None and pushed.failed:
                log.warning("undo of %s: not yet back on %s: %s (%s)", journal.id, pushed.host,
                            ", ".join(pushed.failed), "; ".join(pushed.errors))
        log.info("undid the rewind of %s before turn %d%s (%d restored, %d deleted)", journal.id,
                 plan.before_turn, " (files only)" if files_only else "", len(done.restored),
                 len(done.deleted))
        return UndoResult(session=journal.id, rewind_seq=plan.rewind_seq,
                          before_turn=plan.before_turn, seq=entry.seq,
                          checkpoint=plan.checkpoint, backup=done.backup.id,
                          restored=done.restored, deleted=done.deleted, turns=returning,
                          files_only=files_only, acp_reset=plan.acp_reset)

