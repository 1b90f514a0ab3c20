"""Rewind methods for Emacs: the impact plan, the rewind itself, one turn's patch.

``sessions/rewind-plan`` returns the plan a user confirms (with its
``digest``); ``sessions/rewind`` carries it out and refuses with ``stale``
when the plan changed since (see `tandem.history.rewind`).
``sessions/rewind-undo-plan`` and ``sessions/rewind-undo`` undo the latest
rewind the same way (`tandem.history.rewind_undo`).
``sessions/turn-patch`` returns one turn's unified diff, from its pre-turn
checkpoint to the checkpoint at its end (to the files now while it runs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from tandem.checkpoints.models import Patch, PatchGap
from tandem.protocol.base import MethodSpec, Params, Reply, TandemError
from tandem.sessions.rewind import RewindPlan, RewindResult
from tandem.sessions.rewind_undo import UndoPlan, UndoResult
from tandem.turns.engine import run_blocking

if TYPE_CHECKING:
    from tandem.app import App


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


async def plan_method(app: App, p: PlanParams) -> RewindPlan:
    """Handler of ``sessions/rewind-plan``."""
    return await app.rewinds.plan(p.session, p.turn)


async def rewind_method(app: App, p: RewindParams) -> RewindResult:
    """Handler of ``sessions/rewind``."""
    return await app.rewinds.rewind(p.session, p.turn, p.digest)


async def undo_plan_method(app: App, p: UndoPlanParams) -> UndoPlan:
    """Handler of ``sessions/rewind-undo-plan``."""
    return await app.rewinds.undo.plan(p.session, p.files_only)


async def undo_method(app: App, p: UndoParams) -> UndoResult:
    """Handler of ``sessions/rewind-undo``."""
    return await app.rewinds.undo.undo(p.session, p.digest, p.files_only)


async def turn_patch(app: App, p: TurnPatchParams) -> TurnPatch:
    """Handler of ``sessions/turn-patch``."""
    journal = app.sessions.journal(p.session)
    engine = app.turns.engine
    index = app.sessions.index(journal)
    rec = index.get(p.turn)
    start = rec.start if rec is not None else None
    end = rec.end if rec is not None else None
    if start is None:
        raise TandemError("not-found", f"Session {journal.id} has no turn {p.turn}")
    running = journal.id in engine.running and engine.running[journal.id].turn == p.turn
    patch = end.patch if end else None
    from_id = patch.get("from_id") if isinstance(patch, dict) else None
    to_id = patch.get("to_id") if isinstance(patch, dict) else None
    if running:
        from_id, to_id = start.checkpoint, None
    elif not (isinstance(from_id, str) and isinstance(to_id, str)):
        why = "it has no checkpoint" if not start.checkpoint else "it recorded no patch"
        raise TandemError("no-checkpoint", f"Turn {p.turn} has no patch to show: {why}")
    if not isinstance(from_id, str):
        raise TandemError("no-checkpoint", f"Turn {p.turn} has no checkpoint")
    if running and app.rewinds.is_remote(journal):  # the server's files as they are now
        await app.rewinds.sync_remote(journal)
    cp = app.checkpoints.for_root(app.rewinds.checkpoint_root(journal))
    try:
        result: Patch = await run_blocking(cp.diff, from_id, to_id)
    except TandemError as e:
        if e.code in ("not-found", "invalid"):
            raise TandemError("no-checkpoint", f"The checkpoints of turn {p.turn} are not in "
                              f"the store of {cp.root}: {e.message}") from e
        raise
    if not running and isinstance(patch, dict):
        result = _as_recorded(result, patch)
    return TurnPatch(session=journal.id, turn=p.turn, root=str(cp.root), running=running,
                     rewound=p.turn in index.hidden, patch=result)


def _as_recorded(result: Patch, recorded: dict[str, Any]) -> Patch:
    """RESULT with the completeness the turn recorded (shell runs, writes outside)."""
    try:
        gaps = [PatchGap.model_validate(g) for g in recorded.get("gaps") or []]
    except ValueError:
        return result
    if recorded.get("completeness") not in ("no-changes", "captured", "incomplete"):
        return result
    return result.model_copy(update={"completeness": recorded["completeness"], "gaps": gaps})


METHODS: list[MethodSpec] = [
    MethodSpec("sessions/rewind-plan", PlanParams, plan_method,
               "What a rewind before a turn would do (files, turns, attempts, gaps).",
               RewindPlan),
    MethodSpec("sessions/rewind", RewindParams, rewind_method,
               "Rewind before a turn as planned: restore files, then one rewind entry.",
               RewindResult),
    MethodSpec("sessions/rewind-undo-plan", UndoPlanParams, undo_plan_method,
               "What undoing the latest rewind would do (files, turns returning, refusal).",
               UndoPlan),
    MethodSpec("sessions/rewind-undo", UndoParams, undo_method,
               "Undo the latest rewind as planned: files back, then one rewind_undo entry.",
               UndoResult),
    MethodSpec("sessions/turn-patch", TurnPatchParams, turn_patch,
               "One turn's patch with its unified diff.", TurnPatch),
]
