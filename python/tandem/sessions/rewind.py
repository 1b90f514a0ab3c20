"""Rewind's pure part: the facts of the discarded turns and the impact plan.

The plan (`build_plan`) says what a rewind before turn N of a session would
do now: the files restored to turn N's pre-turn checkpoint or deleted, the
files someone other than tandem changed since (shown, never silently
overwritten), the turns and directive attempts discarded, and the known
capture gaps. It carries a ``digest``; the rewind refuses with ``stale``
when the plan it would carry out differs from the one the user confirmed.
The orchestration (holding the session, the restore, the entry) is
`tandem.history.rewind`, above the turn engine.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from tandem.checkpoints.checkpointer import Checkpointer
from tandem.protocol.base import TandemError
from tandem.providers.registry import keeps_conversation
from tandem.sessions.compaction import compaction_blocks_rewind
from tandem.sessions.reverts import left_after
from tandem.store.turn_index import TurnIndex

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


def turn_facts(entries: Sequence[Mapping[str, Any]], before_turn: int,
               index: TurnIndex | None = None) -> TurnFacts:
    """The facts of a rewind before BEFORE_TURN in ENTRIES (plain dicts), or a refusal.

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
        raw_end = rec.first.get("turn_end") if end is not None else None
        patch = end.patch if end is not None else None
        patch = patch if isinstance(patch, Mapping) else None
        files = [str(f.get("path")) for f in (patch or {}).get("files", [])
                 if isinstance(f, Mapping)]
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
        facts.gaps.extend(_patch_gaps(t, raw_end, patch))
        to_id = reverted.get(t) or (patch.get("to_id") if patch else None)
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


def _patch_gaps(turn: int, end: Mapping[str, Any] | None, patch: Mapping[str, Any] | None
                ) -> list[KnownGap]:
    if end is None:
        return [KnownGap(kind="no-patch", turn=turn, detail=f"turn {turn} has not ended")]
    if patch is None:
        return [KnownGap(kind="no-patch", turn=turn,
                         detail=f"turn {turn} recorded no patch; what it changed is unknown")]
    if "error" in patch and "files" not in patch:
        return [KnownGap(kind="no-patch", turn=turn,
                         detail=f"turn {turn}'s patch failed: {patch.get('error')}")]
    out: list[KnownGap] = []
    for g in patch.get("gaps") or []:
        if isinstance(g, Mapping) and g.get("kind") in get_args(GapKind):
            out.append(KnownGap(kind=g["kind"], path=g.get("path"), detail=str(g.get("detail", "")),
                                turn=turn))
    return out


# -- the plan ---------------------------------------------------------------------


def _digest(plan: RewindPlan) -> str:
    """A token over everything the user confirms (and the journal position)."""
    keep = plan.model_dump(mode="json", exclude={"digest", "diff", "diff_truncated"})
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()


def build_plan(cp: Checkpointer, session: str, entries: Sequence[Mapping[str, Any]],
               journal_seq: int, before_turn: int, index: TurnIndex | None = None
               ) -> RewindPlan:
    """The plan of a rewind before BEFORE_TURN (blocking: runs git); INDEX: ENTRIES' index."""
    facts = turn_facts(entries, before_turn, index)
    try:
        cp.get(facts.checkpoint)
    except TandemError as e:
        raise TandemError(
            "no-checkpoint",
            f"The checkpoint of turn {before_turn} is not in the store of {cp.root} "
            f"({e.message}); the session may have been moved since",
        ) from e
    expected = facts.expected_after
    if expected is not None:
        try:
            cp.get(expected)
        except TandemError:
            expected = None
    restore = cp.plan_restore(facts.checkpoint, expected)
    touched = set(restore.to_restore) | set(restore.to_delete)
    external = [ExternalChange(path=p, when=f"since turn {facts.latest} ended")
                for p in restore.changed_externally]
    for turn, nxt_turn, end, nxt in facts.spans:
        between = cp.diff(end, nxt)
        external += [ExternalChange(path=f.path, when=f"between turns {turn} and {nxt_turn}")
                     for f in between.files if f.path in touched]
    gaps = [KnownGap(kind=g.kind, path=g.path, detail=g.detail) for g in restore.gaps]
    plan = RewindPlan(
        session=session, before_turn=before_turn, root=str(cp.root), checkpoint=facts.checkpoint,
        expected_after=expected, current_tree=restore.current_tree, journal_seq=journal_seq,
        to_restore=restore.to_restore, to_delete=restore.to_delete, changed_externally=external,
        turns=facts.turns, attempts=facts.attempts, gaps=gaps + facts.gaps, diff=restore.diff,
        diff_truncated=restore.diff_truncated, acp_reset=facts.acp_reset)
    return plan.model_copy(update={"digest": _digest(plan)})
