"""Rewind across a crash: the intent a rewind records, and settling a left one.

A rewind is two writes in two places: the files (the checkpointer's restore)
and one ``rewind`` entry in the journal. Before the first file moves, the
rewind records an intent, ``rewind-intent.json`` in the session's artifact
folder (written to a temporary file, fsynced, renamed, folder fsynced): the
session, ``before_turn``, the target and backup checkpoints and the token
naming the restore's temporary files. It removes the intent once the entry
is written and synced, or once the files are put back after a failure.

An intent that is still there means the process died in between. The rule:
**the ``rewind`` entry is the commit point.** If the journal holds the entry
the intent names, the rewind stands (files were restored in full before the
entry was written) and only the leftovers go. If it does not, the files go
back to the backup checkpoint (`Checkpointer.undo_restore`: a path changed
since by someone else is left alone, a safety checkpoint is kept), so the
session and its files are exactly as before the rewind the user can simply
do again from a fresh plan. Either way the restore's own temporary files
(``.NAME.tandem-TOKEN``, the exact names the token gives) are removed, one
``rewind_recovery`` entry says what happened, a warning is logged and the
session's notices carry one sentence.

Recovery runs when the backend starts (`recover_all`), when a session is
opened (`recover_on_open`, a `SessionManager` hook) and before a rewind is
planned. It needs the journal's lock: a live process holding it may be in
the middle of that very rewind, so it is left to that process.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tandem.checkpoints.restore import TEMP_PATTERN
from tandem.checkpoints.service import CheckpointService
from tandem.events import EventSink
from tandem.paths import sessions_dir
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import RestoreStart
from tandem.protocol.events import EntryEvent
from tandem.store import fsutil
from tandem.store.entry_cache import journal_dicts
from tandem.store.entry_view import JournalEntry
from tandem.store.journal import Journal
from tandem.store.jsonl import now_iso
from tandem.store.layout import (
    JOURNAL_SUFFIX,
    REWIND_INTENT_NAME,
    compact_time,
    rewind_intent_path,
)
from tandem.store.models import entry_to_dict

log = logging.getLogger("tandem.rewind")

INTENT_NAME = REWIND_INTENT_NAME


@dataclass
class Recovery:
    """What settling a left rewind needs: the home, its checkpoints, where to publish."""

    home: Path
    checkpoints: CheckpointService
    events: EventSink


class RewindIntent(BaseModel):
    """What an in-flight rewind is doing: enough to finish or undo it after a crash."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tandem_rewind_intent: Literal[1] = 1
    session: str
    before_turn: int = Field(ge=1)
    root: str
    """The workspace root the files were restored in."""
    checkpoint: str
    """The target: turn ``before_turn``'s pre-turn checkpoint."""
    backup: str
    """The files as they were just before the restore."""
    token: str = Field(pattern=r"^[0-9a-f]{16}$")
    """Names the restore's temporary files: ``temp_pattern`` with this token."""
    temp_pattern: str = TEMP_PATTERN
    journal_seq: int
    """The journal's last seq when the rewind was planned."""
    turns: list[int] = Field(default_factory=list)
    kind: Literal["rewind", "rewind_undo"] = "rewind"
    """Which transaction: a rewind, or the undo of one (its entry is the commit point)."""


class RecoveryReport(BaseModel):
    """What settling one left intent did."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session: str
    before_turn: int
    outcome: Literal["committed", "rolled-back"]
    put_back: list[str] = Field(default_factory=list)
    left: list[str] = Field(default_factory=list)
    """Paths changed since the crash by someone else: left as they are."""
    temp_removed: list[str] = Field(default_factory=list)
    safety: str | None = None
    """Checkpoint of the files just before recovery put them back."""
    message: str


def write_intent(journal: Journal, plan_seq: int, before_turn: int, root: str,
                 turns: list[int], start: RestoreStart,
                 kind: Literal["rewind", "rewind_undo"] = "rewind") -> RewindIntent:
    """Record the intent of a rewind (or of its undo, KIND) of JOURNAL's session, durably."""
    intent = RewindIntent(session=journal.id, before_turn=before_turn, root=root,
                          checkpoint=start.target, backup=start.backup, token=start.token,
                          journal_seq=plan_seq, turns=turns, kind=kind)
    path = rewind_intent_path(journal.path)
    fsutil.private_dir(path.parent)
    fsutil.atomic_write(path, intent.model_dump_json(indent=1).encode() + b"\n")
    return intent


def drop_intent(journal_path: Path) -> None:
    """Remove the intent of the journal at JOURNAL_PATH (the rewind is settled)."""
    path = rewind_intent_path(journal_path)
    try:
        path.unlink()
    except FileNotFoundError:
        return
    fsutil.fsync_dir(path.parent)


def _read_intent(path: Path) -> RewindIntent:
    try:
        return RewindIntent.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError) as e:
        raise TandemError("invalid", f"{type(e).__name__}: {str(e)[:200]}") from e


def _set_aside(journal: Journal, path: Path, why: str) -> None:
    """Move an intent that cannot be acted on out of the way, and say so; files untouched."""
    aside = path.with_name(f"{INTENT_NAME}.unreadable-{compact_time(now_iso())}")
    os.replace(path, aside)
    fsutil.fsync_dir(path.parent)
    text = (f"An interrupted rewind left a record that cannot be read ({why}); it was set aside "
            f"in {aside} and the files were left as they are.")
    log.error("rewind intent of %s: %s", journal.id, text)
    journal.notices.append(text)


def _committed(entries: Iterable[JournalEntry], intent: RewindIntent) -> bool:
    """Whether the rewind (or undo) INTENT describes was written to the journal."""
    for e in entries:
        if ((e["type"] == "rewind" or e["type"] == "rewind_undo") and e["type"] == intent.kind
                and e.get("backup") == intent.backup
                and e.get("checkpoint") == intent.checkpoint):
            return True
    return False


def _noted(entries: Iterable[JournalEntry], intent: RewindIntent) -> bool:
    """Whether settling INTENT was already recorded (a ``rewind_recovery`` entry)."""
    return any(e["type"] == "rewind_recovery" and e.get("backup") == intent.backup
               and e.get("checkpoint") == intent.checkpoint for e in entries)


def recover(ctx: Recovery, journal: Journal, entries: list[JournalEntry] | None = None
            ) -> RecoveryReport | None:
    """Settle the rewind intent JOURNAL's session left, if any (blocking: runs git).

    ENTRIES are the journal's entries (the typed view; read from JOURNAL when None).
    Returns None when there is no intent or another process holds the
    journal. Raises `TandemError` when the intent cannot be settled now (it
    stays, and the next start or open tries again).
    """
    path = rewind_intent_path(journal.path)
    if not path.exists():
        return None
    if not journal.writable:
        log.info("rewind intent of %s left alone: %s", journal.id, journal.read_only_reason)
        return None
    try:
        intent = _read_intent(path)
        if intent.session != journal.id:
            raise TandemError("invalid", f"it names session {intent.session}")
    except TandemError as e:
        _set_aside(journal, path, e.message)
        return None
    if entries is None:
        entries = journal_dicts(journal)
    cp = ctx.checkpoints.for_root(intent.root)
    what = (f"A rewind before turn {intent.before_turn}" if intent.kind == "rewind" else
            f"An undo of the rewind before turn {intent.before_turn}")
    again = "Rewind again" if intent.kind == "rewind" else "Undo the rewind again"
    if _committed(entries, intent):
        report = RecoveryReport(
            session=intent.session, before_turn=intent.before_turn, outcome="committed",
            temp_removed=cp.sweep_restore(intent.backup, intent.checkpoint, intent.token),
            message=f"{what} was interrupted by a crash after it was written; it stands.")
    else:
        undone = cp.undo_restore(intent.backup, intent.checkpoint, intent.token)
        left = (f"; left as they are (changed since): {', '.join(undone.left)}"
                if undone.left else "")
        report = RecoveryReport(
            session=intent.session, before_turn=intent.before_turn, outcome="rolled-back",
            put_back=undone.put_back, left=undone.left, temp_removed=undone.temp_removed,
            safety=undone.safety,
            message=(f"{what} was interrupted by a crash; "
                     f"it was rolled back: {len(undone.put_back)} file(s) put back as they were "
                     f"before it{left}. {again} if you still want it."))
    if not _noted(entries, intent):
        entry = journal.append({
            "type": "rewind_recovery", **report.model_dump(exclude={"session", "message"}),
            "checkpoint": intent.checkpoint, "backup": intent.backup, "message": report.message,
            **({"undo": True} if intent.kind == "rewind_undo" else {})})
        journal.sync()
        ctx.events.publish(journal.id, EntryEvent(entry=entry_to_dict(entry)))
    drop_intent(journal.path)
    journal.notices.append(report.message)
    log.warning("%s of %s before turn %d: crash recovery %s (%d put back, %d left, "
                "%d temporary files removed)", intent.kind, journal.id, intent.before_turn,
                "rolled back" if report.outcome == "rolled-back" else "kept the rewind",
                len(report.put_back), len(report.left), len(report.temp_removed))
    return report


def recover_on_open(ctx: Recovery, journal: Journal) -> None:
    """`SessionManager` hook: settle a left intent as the session is opened.

    Never stops the opening: a failure is logged and told in the notices.
    """
    if not rewind_intent_path(journal.path).exists():
        return
    try:
        recover(ctx, journal)
    except (TandemError, OSError) as e:
        text = e.message if isinstance(e, TandemError) else str(e)
        log.error("rewind crash recovery of %s failed: %s", journal.id, text)
        journal.notices.append(f"An interrupted rewind could not be settled yet: {text}")


def recover_all(ctx: Recovery) -> list[RecoveryReport]:
    """Settle every left rewind intent under CTX's home (at backend start)."""
    reports: list[RecoveryReport] = []
    for path in sorted(sessions_dir(ctx.home).glob(f"*/*/{INTENT_NAME}")):
        journal_path = path.parent.with_name(path.parent.name + JOURNAL_SUFFIX)
        if not journal_path.is_file():
            log.warning("rewind intent %s has no journal beside it; left alone", path)
            continue
        try:
            journal = Journal.open(journal_path, writable=True)
        except (TandemError, OSError) as e:
            log.error("cannot open %s to settle its rewind intent: %s", journal_path, e)
            continue
        try:
            report = recover(ctx, journal)
        except (TandemError, OSError) as e:
            log.error("rewind crash recovery of %s failed: %s", journal.id,
                      e.message if isinstance(e, TandemError) else e)
            continue
        finally:
            journal.close()
        if report is not None:
            reports.append(report)
    return reports

