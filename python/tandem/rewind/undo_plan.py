"""Undo a Rewind, its plan: which rewind, what returns, and the impact plan.

The session's latest rewind that no ``rewind_undo`` entry cancelled is the
one undone. Its ``backup`` checkpoint holds the files as they were just
before it, so undoing puts the files back there byte for byte and appends
one ``rewind_undo`` entry naming the rewind's seq: the projection, the view
and the directives then treat the rewind as not having happened (nothing is
rewritten). When a turn (or a compaction) came after the rewind, bringing
the rewound turns back would interleave two histories, so the undo is
refused and the plan says which turns; with ``files_only`` the files alone
go back and the turns stay rewound. The one exception is the rewind of an
edit-and-resend (its entry says ``resend``): when the only turn after it is
the resent one, the undo takes that turn back (the entry's ``hides_from``
hides it, as a rewind before it would) and the files go back to before
the resend. As for the rewind's plan, only one step runs git:
`undo_facts` (the journal) and `undo_plan_from` are pure, `read_undo_git`
asks the checkpoint store. The orchestration is `tandem.rewind.undo`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from tandem.checkpoints.checkpointer import Checkpointer
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import PatchSummary, RestorePlan
from tandem.protocol.sessions import (
    DiscardedAttempt,
    DiscardedTurn,
    ExternalChange,
    KnownGap,
    UndoPlan,
)
from tandem.rewind.plan import turn_facts
from tandem.store.entry_view import JournalEntry, RewindEntry
from tandem.store.rewinds import cancels


@dataclass
class UndoFacts:
    """What the journal says about the rewind an undo concerns."""

    rewind: RewindEntry
    returning: list[DiscardedTurn]
    attempts: list[DiscardedAttempt]
    later_turns: list[int]
    refusal: str | None
    acp_reset: bool
    takes_back: list[DiscardedTurn]
    """An edit-and-resend's resent turn, which the undo hides (empty: none)."""
    end_state: str | None
    """The checkpoint the resent turn ended on (what tandem last left), or None."""


def latest_rewind(entries: Sequence[JournalEntry]) -> int:
    """Index in ENTRIES of the latest rewind no undo cancelled; `TandemError` when none."""
    cancelled = {s for s in map(cancels, entries) if s is not None}
    for i in range(len(entries) - 1, -1, -1):
        e = entries[i]
        if e["type"] == "rewind" and e["seq"] not in cancelled:
            return i
    raise TandemError("not-found", "The session has no rewind to undo")


def undo_facts(entries: Sequence[JournalEntry]) -> UndoFacts:
    """The facts of undoing the latest rewind in ENTRIES (the typed view), or a refusal."""
    i = latest_rewind(entries)
    rewind = entries[i]
    if rewind["type"] != "rewind":  # never: latest_rewind finds rewinds only (narrows the type)
        raise TandemError("not-found", "The session has no rewind to undo")
    before = rewind["before_turn"]
    backup = rewind.get("backup")
    if not isinstance(before, int) or not isinstance(backup, str) or not backup:
        raise TandemError("no-checkpoint", "The latest rewind recorded no backup checkpoint, "
                          "so the files it replaced cannot be put back")
    # The turns as the rewind found them: its own facts, read from the journal before it.
    facts = turn_facts(entries[:i], before)
    later = [e["turn"] for e in entries[i + 1:]
             if e["type"] == "turn_start" and isinstance(e["turn"], int)]
    refusal = None
    takes_back: list[DiscardedTurn] = []
    end_state: str | None = None
    compacted = any(e["type"] == "compaction" for e in entries[i + 1:])
    if rewind.get("resend") and len(later) == 1 and not compacted:
        takes_back = turn_facts(entries, later[0]).turns
        for e in entries[i + 1:]:
            if e["type"] == "turn_end" and e["turn"] == later[0]:
                patch = PatchSummary.read(e.get("patch"))
                end_state = patch.to_id or None if patch is not None else None
        later_refused: list[int] = []
    else:
        later_refused = later
    if later_refused:
        refusal = (f"turn(s) {', '.join(map(str, later))} ran after the rewind; undoing it would "
                   "mix the rewound turns with them. Restore only the files instead, or leave it")
    elif compacted:
        refusal = ("the session was compacted after the rewind; the summary does not hold the "
                   "rewound turns. Restore only the files instead, or leave it")
    return UndoFacts(rewind, facts.turns, facts.attempts, later, refusal,
                     bool(rewind.get("acp_reset")), takes_back, end_state)


def _digest(plan: UndoPlan) -> str:
    keep = plan.model_dump(mode="json", exclude={"digest", "diff", "diff_truncated"})
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class UndoGitFacts:
    """What the checkpoint store says about an undo's `UndoFacts` (`read_undo_git`)."""

    root: str
    """The workspace root the checkpoints are of."""
    left_in_store: bool
    """Whether the store holds the state tandem last left (`left_state`)."""
    restore: RestorePlan
    """What restoring the rewind's backup would do now."""


def left_state(facts: UndoFacts) -> str:
    """What tandem last left: the resent turn's end, else the rewind's target ("": none)."""
    return facts.end_state or str(facts.rewind.get("checkpoint") or "")


def read_undo_git(cp: Checkpointer, facts: UndoFacts) -> UndoGitFacts:
    """What CP's store says about FACTS (blocking: runs git), or ``no-checkpoint``."""
    backup = str(facts.rewind["backup"])
    try:
        cp.get(backup)
    except TandemError as e:
        raise TandemError("no-checkpoint", f"The rewind's backup checkpoint is not in the store "
                          f"of {cp.root} ({e.message}); the session may have been moved "
                          "since") from e
    left = left_state(facts)
    expected: str | None = left
    try:
        cp.get(left)
    except TandemError:
        expected = None
    return UndoGitFacts(str(cp.root), expected is not None, cp.plan_restore(backup, expected))


def undo_plan_from(session: str, journal_seq: int, files_only: bool, facts: UndoFacts,
                   git: UndoGitFacts) -> UndoPlan:
    """The plan of undoing the rewind of FACTS, from FACTS and GIT (pure)."""
    rewind, restore = facts.rewind, git.restore
    gaps = [KnownGap(kind=g.kind, path=g.path, detail=g.detail) for g in restore.gaps]
    if not git.left_in_store:
        gaps.append(KnownGap(kind="no-end-state", detail=(
            "the state the rewind left is not in the store, so changes made since cannot be "
            "told apart")))
    returning = [] if files_only else facts.returning
    plan = UndoPlan(
        session=session, rewind_seq=int(rewind.get("seq") or 0),
        before_turn=int(rewind["before_turn"]), root=git.root, checkpoint=str(rewind["backup"]),
        expected_after=left_state(facts), current_tree=restore.current_tree,
        journal_seq=journal_seq,
        files_only=files_only, to_restore=restore.to_restore, to_delete=restore.to_delete,
        changed_externally=[ExternalChange(path=p, when="since the rewind")
                            for p in restore.changed_externally],
        turns=returning, attempts=[] if files_only else facts.attempts,
        later_turns=facts.later_turns, takes_back=[] if files_only else facts.takes_back,
        refusal=None if files_only else facts.refusal,
        gaps=gaps, diff=restore.diff, diff_truncated=restore.diff_truncated,
        acp_reset=facts.acp_reset and not files_only)
    return plan.model_copy(update={"digest": _digest(plan)})


def build_undo_plan(cp: Checkpointer, session: str, entries: Sequence[JournalEntry],
                    journal_seq: int, files_only: bool) -> UndoPlan:
    """The plan of undoing the latest rewind (blocking: runs git): facts, git, then the plan."""
    facts = undo_facts(entries)
    return undo_plan_from(session, journal_seq, files_only, facts, read_undo_git(cp, facts))
