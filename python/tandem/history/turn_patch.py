"""One turn's patch: from its pre-turn checkpoint to the one at its end; the turns to pick from.

While the turn runs the patch goes to the files now. A finished turn's
patch carries the completeness the turn recorded (shell runs, writes
outside the root), which a bare diff of two snapshots cannot know.
"""

from __future__ import annotations

from tandem.checkpoints.service import CheckpointService
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import Patch, PatchSummary
from tandem.protocol.sessions import RevertedPart, TurnPatch, TurnRow, Turns
from tandem.rewind.service import RewindService
from tandem.sessions.service import SessionService
from tandem.turns.engine import TurnEngine, run_blocking


async def turn_patch(sessions: SessionService, engine: TurnEngine, checkpoints: CheckpointService,
                     rewinds: RewindService, session: str, turn: int) -> TurnPatch:
    """The patch of TURN of SESSION with its unified diff."""
    journal = sessions.journal(session)
    index = sessions.index(journal)
    rec = index.get(turn)
    start = rec.start if rec is not None else None
    end = rec.end if rec is not None else None
    if start is None:
        raise TandemError("not-found", f"Session {journal.id} has no turn {turn}")
    running = journal.id in engine.running and engine.running[journal.id].turn == turn
    patch = PatchSummary.read(end.patch) if end else None
    from_id = patch.from_id if patch is not None else None
    to_id = patch.to_id if patch is not None else None
    if running:
        from_id, to_id = start.checkpoint, None
    elif from_id is None or to_id is None:
        why = "it has no checkpoint" if not start.checkpoint else "it recorded no patch"
        raise TandemError("no-checkpoint", f"Turn {turn} has no patch to show: {why}")
    if not isinstance(from_id, str):
        raise TandemError("no-checkpoint", f"Turn {turn} has no checkpoint")
    if running and rewinds.is_remote(journal):  # the server's files as they are now
        await rewinds.sync_remote(journal)
    cp = checkpoints.for_root(rewinds.checkpoint_root(journal))
    try:
        result: Patch = await run_blocking(cp.diff, from_id, to_id)
    except TandemError as e:
        if e.code in ("not-found", "invalid"):
            raise TandemError("no-checkpoint", f"The checkpoints of turn {turn} are not in "
                              f"the store of {cp.root}: {e.message}") from e
        raise
    if not running and patch is not None:
        result = _as_recorded(result, patch)
    reverted = [RevertedPart(path=str(e.get("path")), hunk=_hunk(e.get("hunk")))
                for e in sessions.entries(journal)
                if e.get("type") == "revert" and e.get("of_turn") == turn]
    return TurnPatch(session=journal.id, turn=turn, root=str(cp.root), running=running,
                     rewound=turn in index.hidden, patch=result, reverted=reverted)


def _hunk(value: object) -> int | None:
    """A revert entry's hunk index, None for a whole file (or a value no index is)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _as_recorded(result: Patch, recorded: PatchSummary) -> Patch:
    """RESULT with the completeness the turn recorded (shell runs, writes outside)."""
    return result.model_copy(update={"completeness": recorded.completeness,
                                     "gaps": recorded.gaps})


def turn_rows(sessions: SessionService, session: str, last: int | None = None,
              hide_rewound: bool = False) -> Turns:
    """The turns of SESSION, oldest first: request, outcome, files changed, rewound.

    LAST: only the newest LAST rows (the older ones are never built).
    HIDE_REWOUND: leave out the turns a rewind hid.
    """
    journal = sessions.journal(session)
    index = sessions.index(journal)
    numbers = sorted(index.seen)
    if hide_rewound:
        numbers = [n for n in numbers if n not in index.hidden]
    if last is not None:
        numbers = numbers[-last:]
    rows = []
    for number in numbers:
        rec = index.turns[number]
        start, end, user = rec.start, rec.last_end, rec.user
        request = (user.text if user else "").strip().split("\n", 1)[0][:80]
        patch = PatchSummary.read(end.patch) if end is not None else None
        files = patch.paths() if patch is not None else []
        rows.append(TurnRow(turn=number, origin=start.origin if start else "chat",
                            request=request, outcome=None if rec.open or end is None
                            else end.outcome, files=files, rewound=number in index.hidden))
    return Turns(session=journal.id, turns=rows)
