"""Rewind's plan: the facts of the discarded turns and the impact plan.

The plan says what a rewind before turn N of a session would do now: the
files restored to turn N's pre-turn checkpoint or deleted, the files
someone other than tandem changed since (shown, never silently
overwritten), the turns and directive attempts discarded, and the known
capture gaps. It carries a ``digest``; the rewind refuses with ``stale``
when the plan it would carry out differs from the one the user confirmed.

Three steps, of which only the middle one does I/O: `turn_facts` reads the
journal's entries (pure), `read_git` asks the checkpoint store (blocking:
runs git), and `plan_from` computes the plan from both (pure). `build_plan`
is the three in a row. The orchestration (holding the session, the restore,
the entry) is `tandem.rewind.service`, above the turn engine.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

from tandem.checkpoints.checkpointer import Checkpointer
from tandem.checkpoints.hooks import AfterTurn
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import RestorePlan
from tandem.protocol.sessions import (
    DiscardedAttempt,
    DiscardedTurn,
    ExternalChange,
    GapKind,
    KnownGap,
    RewindPlan,
)
from tandem.providers.registry import keeps_conversation
from tandem.sessions.compaction import compaction_blocks_rewind
from tandem.sessions.reverts import left_after
from tandem.store.entry_view import JournalEntry
from tandem.store.turn_index import TurnIndex

# -- reading the journal ----------------------------------------------------------


@dataclass
class TurnFacts:
    """What the journal says about the turns a rewind before N concerns."""

    before_turn: int
    checkpoint: str
    latest: int
    expected_after: str | None
    turns: list[DiscardedTurn] = field(default_factory=list)
    attempts: list[DiscardedAttempt] = field(default_factory=list)
    gaps: list[KnownGap] = field(default_factory=list)
    spans: list[tuple[int, int, str, str]] = field(default_factory=list)
    """(turn, next visible turn, end state of the turn, pre-turn checkpoint of the next)."""
    acp_reset: bool = False


def _first_line(text: Any, limit: int = 120) -> str:
    line = str(text or "").strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def turn_facts(entries: Sequence[JournalEntry], before_turn: int,
               index: TurnIndex | None = None) -> TurnFacts:
    """The facts of a rewind before BEFORE_TURN in ENTRIES (the typed view), or a refusal.

    INDEX is ENTRIES' `TurnIndex` when the caller has it (built here otherwise).
    """
    if isinstance(before_turn, bool) or not isinstance(before_turn, int) or before_turn < 1:
        raise TandemError("invalid", f"before_turn must be a turn number >= 1, not {before_turn!r}")
    index = index if index is not None else TurnIndex(entries)
    seen, hidden = index.seen, index.hidden
    if before_turn not in seen:
        raise TandemError("not-found", f"The session has no turn {before_turn}")
    if before_turn in hidden:
        raise TandemError("not-found", f"Turn {before_turn} was already rewound")
    reason = compaction_blocks_rewind(entries, before_turn)
    if reason is not None:
        raise TandemError("compaction", reason)
    discarded = sorted(t for t in seen - hidden if t >= before_turn)
    records = {t: index.turns[t] for t in discarded}
    first = records[before_turn].start
    checkpoint = first.checkpoint if first is not None else None
    if not isinstance(checkpoint, str) or not checkpoint:
        raise TandemError(
            "no-checkpoint",
            f"Turn {before_turn} recorded no checkpoint, so its files cannot be restored",
        )
    facts = TurnFacts(before_turn, checkpoint, discarded[-1], None)
    ends: dict[int, str | None] = {}
    reverted = left_after(entries)  # a revert after a turn is tandem's change, not an outside one
    for t in discarded:
        rec = records[t]
        start, end, opened, user = rec.start, rec.end, rec.directive_open, rec.user
        after = AfterTurn.read(end.patch) if end is not None else None
        patch = after.patch if after is not None else None
        files = patch.paths() if patch is not None else []
        provider = start.provider if start is not None else ""
        facts.turns.append(DiscardedTurn(
            turn=t, origin=start.origin if start is not None else "chat",
            request=_first_line(user.text if user is not None else None),
            outcome=end.outcome if end else None, provider=provider,
            directive=opened.directive if opened else None,
            files=files, completeness=end.completeness if end else None))
        if opened:
            facts.attempts.append(DiscardedAttempt(
                turn=t, workspace=opened.workspace, directive=opened.directive,
                action=opened.action, attempt=opened.attempt))
        elif keeps_conversation(provider):
            facts.acp_reset = True  # the root chat's agent conversation saw this turn
        facts.gaps.extend(_patch_gaps(t, after))
        to_id = reverted.get(t) or (patch.to_id if patch else None)
        ends[t] = to_id if isinstance(to_id, str) and to_id else None
    for a, b in zip(discarded, discarded[1:], strict=False):
        nxt_start = records[b].start
        nxt = nxt_start.checkpoint if nxt_start is not None else None
        if ends[a] and isinstance(nxt, str) and nxt and ends[a] != nxt:
            facts.spans.append((a, b, ends[a] or "", nxt))
    facts.expected_after = ends[facts.latest]
    if facts.expected_after is None:
        facts.gaps.append(KnownGap(
            kind="no-end-state", turn=facts.latest,
            detail=(f"the files at the end of turn {facts.latest} were not recorded, so "
                    "changes made since by something other than tandem cannot be told apart")))
    return facts


def _patch_gaps(turn: int, after: AfterTurn | None) -> list[KnownGap]:
    """What TURN's recorded patch (AFTER; None: the turn has not ended) may not show."""
    if after is None:
        return [KnownGap(kind="no-patch", turn=turn, detail=f"turn {turn} has not ended")]
    if after.error is not None:
        return [KnownGap(kind="no-patch", turn=turn,
                         detail=f"turn {turn}'s patch failed: {after.error}")]
    if after.patch is None:
        return [KnownGap(kind="no-patch", turn=turn,
                         detail=f"turn {turn} recorded no patch; what it changed is unknown")]
    known = get_args(GapKind)
    return [KnownGap(kind=g.kind, path=g.path, detail=g.detail, turn=turn)
            for g in after.patch.gaps if g.kind in known]


# -- the plan ---------------------------------------------------------------------


def _digest(plan: RewindPlan) -> str:
    """A token over everything the user confirms (and the journal position)."""
    keep = plan.model_dump(mode="json", exclude={"digest", "diff", "diff_truncated"})
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class GitFacts:
    """What the checkpoint store says about a rewind's `TurnFacts` (`read_git`)."""

    root: str
    """The workspace root the checkpoints are of."""
    expected_after: str | None
    """The facts' ``expected_after`` when the store still holds it, else None."""
    restore: RestorePlan
    """What restoring the facts' checkpoint would do now."""
    between: list[tuple[int, int, list[str]]] = field(default_factory=list)
    """(turn, next visible turn, paths changed between them), one per span of the facts."""


def read_git(cp: Checkpointer, facts: TurnFacts) -> GitFacts:
    """What CP's store says about FACTS (blocking: runs git), or ``no-checkpoint``."""
    try:
        cp.get(facts.checkpoint)
    except TandemError as e:
        raise TandemError(
            "no-checkpoint",
            f"The checkpoint of turn {facts.before_turn} is not in the store of {cp.root} "
            f"({e.message}); the session may have been moved since",
        ) from e
    expected = facts.expected_after
    if expected is not None:
        try:
            cp.get(expected)
        except TandemError:
            expected = None
    restore = cp.plan_restore(facts.checkpoint, expected)
    between = [(turn, nxt_turn, [f.path for f in cp.diff(end, nxt).files])
               for turn, nxt_turn, end, nxt in facts.spans]
    return GitFacts(str(cp.root), expected, restore, between)


def plan_from(session: str, journal_seq: int, facts: TurnFacts, git: GitFacts) -> RewindPlan:
    """The plan of a rewind of SESSION (journal at JOURNAL_SEQ) from FACTS and GIT (pure)."""
    restore = git.restore
    touched = set(restore.to_restore) | set(restore.to_delete)
    external = [ExternalChange(path=p, when=f"since turn {facts.latest} ended")
                for p in restore.changed_externally]
    for turn, nxt_turn, paths in git.between:
        external += [ExternalChange(path=p, when=f"between turns {turn} and {nxt_turn}")
                     for p in paths if p in touched]
    gaps = [KnownGap(kind=g.kind, path=g.path, detail=g.detail) for g in restore.gaps]
    plan = RewindPlan(
        session=session, before_turn=facts.before_turn, root=git.root,
        checkpoint=facts.checkpoint, expected_after=git.expected_after,
        current_tree=restore.current_tree, journal_seq=journal_seq,
        to_restore=restore.to_restore, to_delete=restore.to_delete, changed_externally=external,
        turns=facts.turns, attempts=facts.attempts, gaps=gaps + facts.gaps, diff=restore.diff,
        diff_truncated=restore.diff_truncated, acp_reset=facts.acp_reset)
    return plan.model_copy(update={"digest": _digest(plan)})


def build_plan(cp: Checkpointer, session: str, entries: Sequence[JournalEntry],
               journal_seq: int, before_turn: int, index: TurnIndex | None = None
               ) -> RewindPlan:
    """The plan of a rewind before BEFORE_TURN (blocking: runs git); INDEX: ENTRIES' index."""
    facts = turn_facts(entries, before_turn, index)
    return plan_from(session, journal_seq, facts, read_git(cp, facts))
