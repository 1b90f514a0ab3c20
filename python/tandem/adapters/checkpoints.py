"""Read-only checkpoint methods (``checkpoints/…``): list, show a patch, preview a restore.

Restoring is not exposed here: a restore is one half of a Rewind
transaction (files, then the journal's rewind entry), which
``sessions/rewind`` carries out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.to_thread

from tandem.protocol.base import MethodSpec
from tandem.protocol.checkpoints import (
    CheckpointList,
    DiffParams,
    ListParams,
    Patch,
    PlanParams,
    RestorePlan,
)

if TYPE_CHECKING:
    from tandem.app import App


async def list_checkpoints(app: App, params: ListParams) -> CheckpointList:
    """Handler of ``checkpoints/list``."""
    cp = app.checkpoints.for_root(params.root)
    return CheckpointList(await anyio.to_thread.run_sync(cp.history, params.limit))


async def diff(app: App, params: DiffParams) -> Patch:
    """Handler of ``checkpoints/diff``."""
    cp = app.checkpoints.for_root(params.root)
    return await anyio.to_thread.run_sync(cp.diff, params.start, params.to)


async def plan_restore(app: App, params: PlanParams) -> RestorePlan:
    """Handler of ``checkpoints/plan-restore``."""
    cp = app.checkpoints.for_root(params.root)
    return await anyio.to_thread.run_sync(cp.plan_restore, params.checkpoint, params.expected_after)


METHODS: list[MethodSpec] = [
    MethodSpec("checkpoints/list", ListParams, list_checkpoints, "Newest checkpoints of a root."),
    MethodSpec(
        "checkpoints/diff", DiffParams, diff, "Patch between a checkpoint and later.", Patch
    ),
    MethodSpec(
        "checkpoints/plan-restore",
        PlanParams,
        plan_restore,
        "What restoring a checkpoint would do.",
        RestorePlan,
    ),
]
