"""Rewind before turn N: an impact plan, then one transaction (files, then journal).

The plan (`plan_rewind`) says what a rewind before turn N of a session would
do now: the files restored to turn N's pre-turn checkpoint or deleted, the
files someone other than tandem changed since (shown, never silently
overwritten), the turns and directive attempts discarded, and the known
capture gaps. It carries a ``digest``; `rewind` refuses with ``stale`` when
the plan it would carry out differs from the one the user confirmed.

`rewind` restores the files through the checkpointer (whose own transaction
puts every file back when one fails), then appends ONE ``rewind`` entry and
fsyncs it. When the restore fails no entry is written; when the entry cannot
be written the files are put back. Journal bytes are never rewritten: the
projection, the view and the directives derive from the rewind entry which
turns are hidden. Across a crash the two halves stay one unit: an intent is
recorded before any file moves and removed once the entry is synced; a left
one is settled by `tandem.sessions.rewind_recovery` (the entry is the commit
point: without it the files go back to the backup).

Refusals: ``busy`` (a turn, a compaction or another rewind is in flight),
``not-found`` (no such turn, or already rewound), ``no-checkpoint`` (the turn
recorded none, or it is not in this workspace's store), ``compaction`` (the
latest compaction summarised the turn), ``read-only``, ``stale``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from tandem.checkpoints.checkpointer import Checkpointer
from tandem.checkpoints.models import RestoreResult, RestoreStart
from tandem.checkpoints.service import checkpoints
from tandem.protocol.base import TandemError
from tandem.sessions.compaction import compaction_blocks_rewind
from tandem.sessions.compaction_api import is_compacting
from tandem.sessions.projection import visible_turns
from tandem.sessions.reverts import left_after
from tandem.sessions.rewind_recovery import drop_intent, intent_path, recover, write_intent
from tandem.store.journal import Journal
from tandem.store.models import entry_to_dict
from tandem.turns.engine import TurnSpec, run_blocking
from tandem.turns.service import TurnService, turns

log = logging.getLogger("tandem.rewind")

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


class RewindResult(_Model):
    """What a completed rewind did."""

    session: str
    before_turn: int
    seq: int
    """Seq of the ``rewind`` entry."""
    checkpoint: str
    backup: str
    """Checkpoint of the files as they were just before the restore."""
    restored: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    turns: list[int] = Field(default_factory=list)
    acp_reset: bool = False


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


def turn_facts(entries: Sequence[Mapping[str, Any]], before_turn: int) -> TurnFacts:
    """The facts of a rewind before BEFORE_TURN in ENTRIES (plain dicts), or a refusal."""
    if isinstance(before_turn, bool) or not isinstance(before_turn, int) or before_turn < 1:
        raise TandemError("invalid", f"before_turn must be a turn number >= 1, not {before_turn!r}")
    seen, hidden = visible_turns(entries)
    if before_turn not in seen:
        raise TandemError("not-found", f"The session has no turn {before_turn}")
    if before_turn in hidden:
        raise TandemError("not-found", f"Turn {before_turn} was already rewound")
    reason = compaction_blocks_rewind(entries, before_turn)
    if reason is not None:
        raise TandemError("compaction", reason)
    discarded = sorted(t for t in seen - hidden if t >= before_turn)
    by_turn: dict[int, dict[str, Any]] = {t: {} for t in discarded}
    for e in entries:
        turn = e.get("turn")
        if turn not in by_turn:
            continue
        info = by_turn[turn]
        kind = e.get("type")
        if kind in ("turn_start", "directive_open", "turn_end") and kind not in info:
            info[kind] = e
        elif kind == "user" and "user" not in info:
            info["user"] = e
    checkpoint = by_turn[before_turn].get("turn_start", {}).get("checkpoint")
    if not isinstance(checkpoint, str) or not checkpoint:
        raise TandemError(
            "no-checkpoint",
            f"Turn {before_turn} recorded no checkpoint, so its files cannot be restored",
        )
    facts = TurnFacts(before_turn, checkpoint, discarded[-1], None)
    ends: dict[int, str | None] = {}
    reverted = left_after(entries)  # a revert after a turn is tandem's change, not an outside one
    for t in discarded:
        info = by_turn[t]
        start, end = info.get("turn_start", {}), info.get("turn_end")
        opened = info.get("directive_open")
        patch = end.get("patch") if end else None
        patch = patch if isinstance(patch, Mapping) else None
        files = [str(f.get("path")) for f in (patch or {}).get("files", [])
                 if isinstance(f, Mapping)]
        facts.turns.append(DiscardedTurn(
            turn=t, origin=str(start.get("origin", "chat")),
            request=_first_line(info.get("user", {}).get("text")),
            outcome=end.get("outcome") if end else None, provider=str(start.get("provider", "")),
            directive=str(opened.get("directive")) if opened else None,
            files=files, completeness=end.get("completeness") if end else None))
        if opened:
            facts.attempts.append(DiscardedAttempt(
                turn=t, workspace=str(opened.get("workspace", "")),
                directive=str(opened.get("directive", "")), action=str(opened.get("action", "")),
                attempt=opened.get("attempt") if isinstance(opened.get("attempt"), int) else None))
        elif str(start.get("provider", "")).startswith("acp:"):
            facts.acp_reset = True  # the root ACP conversation saw this chat turn
        facts.gaps.extend(_patch_gaps(t, end, patch))
        to_id = reverted.get(t) or (patch.get("to_id") if patch else None)
        ends[t] = to_id if isinstance(to_id, str) and to_id else None
    for a, b in zip(discarded, discarded[1:], strict=False):
        nxt = by_turn[b].get("turn_start", {}).get("checkpoint")
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
               journal_seq: int, before_turn: int) -> RewindPlan:
    """The plan of a rewind before BEFORE_TURN (blocking: runs git)."""
    facts = turn_facts(entries, before_turn)
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


# -- the service ------------------------------------------------------------------


class RewindService:
    """Sessions with a rewind in flight (one at a time per session)."""

    def __init__(self) -> None:
        self.active: set[str] = set()


def rewinds(app: Any) -> RewindService:
    """The `RewindService` of APP."""
    service: RewindService = app.service("rewind", lambda _a: RewindService())
    return service


def _check_idle(app: Any, service: TurnService, journal: Journal) -> None:
    sid = journal.id
    if not journal.writable:
        raise TandemError("read-only", journal.read_only_reason or "session is read-only")
    if sid in service.engine.running:
        raise TandemError("busy", f"A turn is running in session {sid}; rewind when it has "
                          "ended (or cancel it with C-c C-c)")
    if is_compacting(app, sid):
        raise TandemError("busy", f"Session {sid} is being compacted; rewind when it is done")


def _entries(app: Any, journal: Journal) -> list[dict[str, Any]]:
    return turns(app).entries(journal)


async def plan_rewind(app: Any, session: str, before_turn: int) -> RewindPlan:
    """The impact plan of a rewind before BEFORE_TURN of SESSION (an id or unique prefix)."""
    service = turns(app)
    journal = service.journal(session)
    _check_idle(app, service, journal)
    root = service.root_of(journal)
    if not root.is_dir():
        raise TandemError("not-found", f"The session's directory {root} no longer exists; "
                          "resume it to re-root it first")
    cp = checkpoints(app).for_root(root)
    if intent_path(journal.path).exists():  # a rewind a crash interrupted: settle it first
        await run_blocking(recover, app, journal, _entries(app, journal))
    seq = journal.last_seq
    entries = _entries(app, journal)
    plan: RewindPlan = await run_blocking(build_plan, cp, journal.id, entries, seq, before_turn)
    return plan


FileHook = Callable[[str], None]


async def rewind(app: Any, session: str, before_turn: int, digest: str | None,
                 *, before_file: FileHook | None = None) -> RewindResult:
    """Rewind SESSION before BEFORE_TURN, as planned with DIGEST (None: no guard).

    BEFORE_FILE is the checkpointer's fault-injection seam (tests only).
    """
    if digest is not None and (not isinstance(digest, str) or len(digest) != 64):
        raise TandemError("invalid", f"not a plan digest: {digest!r}")
    service = turns(app)
    sid = service.journal(session).id
    state = rewinds(app)
    if sid in state.active:
        raise TandemError("busy", f"Session {sid} is already being rewound")
    if sid in service.engine.held:  # a turn is being accepted right now
        raise TandemError("busy", service.engine.held[sid])
    state.active.add(sid)
    # No turn may start while the files are restored and the entry written.
    service.engine.held[sid] = f"Session {sid} is being rewound; send again when it is done"
    try:
        return await _rewind(app, service, sid, before_turn, digest, before_file)
    finally:
        state.active.discard(sid)
        service.engine.held.pop(sid, None)


async def _rewind(app: Any, service: TurnService, sid: str, before_turn: int,
                  digest: str | None, before_file: FileHook | None) -> RewindResult:
    plan = await plan_rewind(app, sid, before_turn)
    if digest is not None and plan.digest != digest:
        raise TandemError("stale", "The workspace or the session changed since this rewind was "
                          "planned; look at the new plan and confirm again")
    journal = service.journal(sid)
    _check_idle(app, service, journal)
    if journal.last_seq != plan.journal_seq:
        raise TandemError("stale", "The session changed while the rewind was planned; plan again")
    cp = checkpoints(app).for_root(plan.root)
    turns_hidden = [t.turn for t in plan.turns]

    def record_intent(start: RestoreStart) -> None:
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
        if e.code == "conflict":
            raise TandemError("stale", "Files changed since this rewind was planned; nothing "
                              "was restored. Look at the new plan and confirm again") from e
        raise  # restore-failed: the checkpointer put every file back; no entry is written
    try:
        if journal.id in service.engine.running or journal.last_seq != plan.journal_seq:
            raise TandemError("busy", "A turn started while the files were being restored; the "
                              "files were put back and the session is unchanged")
        entry = journal.append({
            "type": "rewind", "before_turn": before_turn, "checkpoint": plan.checkpoint,
            "backup": done.backup.id, "restored": done.restored, "deleted": done.deleted,
            "turns": turns_hidden, "acp_reset": plan.acp_reset})
    except BaseException:
        await _put_back(cp, done)
        drop_intent(journal.path)  # files as before; a failed put-back keeps it for recovery
        raise
    try:
        journal.sync()
    except OSError as e:  # the entry is written; its durability is in doubt: keep the intent
        raise TandemError("io", f"Rewind written but not synced to disk: {e.strerror}") from e
    drop_intent(journal.path)
    app.events.publish(sid, "entry", {"entry": entry_to_dict(entry)})
    if plan.acp_reset:
        await _reset_acp(service, journal, plan)
    log.info("rewound %s before turn %d (%d restored, %d deleted)", sid, before_turn,
             len(done.restored), len(done.deleted))
    return RewindResult(session=sid, before_turn=before_turn, seq=entry.seq,
                        checkpoint=plan.checkpoint, backup=done.backup.id,
                        restored=done.restored, deleted=done.deleted,
                        turns=[t.turn for t in plan.turns], acp_reset=plan.acp_reset)


async def _put_back(cp: Checkpointer, done: RestoreResult) -> None:
    """Undo a completed restore: the files go back to its backup checkpoint."""
    try:
        await run_blocking(lambda: cp.restore(done.backup.id))
    except Exception as e:
        raise TandemError(
            "restore-failed",
            f"The rewind entry could not be written and putting the files back failed too "
            f"({e}); the files before the rewind are kept in checkpoint {done.backup.id}",
            {"backup": done.backup.id},
        ) from e


async def _reset_acp(service: TurnService, journal: Journal, plan: RewindPlan) -> None:
    """Make the root chat's ACP conversation start afresh, seeded from the projection.

    The agent's conversation still holds the discarded turns. The session's
    providers are stopped, and each ACP provider the root chat used is
    rebuilt and told to open a new session on its next turn (the journal's
    rewind entry carries ``acp_reset`` for a backend that starts later).
    """
    from tandem.providers.acp import AcpProvider  # lazy: pulls in the acp package

    await service.close_session(journal.id)
    for name in sorted({t.provider for t in plan.turns
                        if t.directive is None and t.provider.startswith("acp:")}):
        try:
            provider = service.provider(TurnSpec(session=journal.id, text="(rewind)",
                                                 provider=name), journal)
        except TandemError as e:  # no longer configured: nothing runs to reset
            log.info("no ACP provider %s to reset after a rewind: %s", name, e.message)
            continue
        if isinstance(provider, AcpProvider):
            provider.reset_root_session(None)
