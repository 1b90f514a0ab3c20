"""Read-only checkpoint methods for Emacs.

Restoring is not exposed here: a restore is one half of a Rewind
transaction (files, then the journal's rewind entry), which the sessions
layer owns. These methods let Emacs list checkpoints, show a patch and
preview what a restore would do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.to_thread
from pydantic import Field

from tandem.checkpoints.models import Checkpoint, Patch, RestorePlan
from tandem.protocol.base import MethodSpec, Params

if TYPE_CHECKING:
    from tandem.app import App


class ListParams(Params):
    """``checkpoints/list``: the newest kept checkpoints of ROOT."""

    root: str = Field(min_length=1)
    limit: int = Field(default=50, ge=1, le=1000)


class DiffParams(Params):
    """``checkpoints/diff``: patch from checkpoint START to TO (None: the root now)."""

    root: str = Field(min_length=1)
    start: str = Field(min_length=40, max_length=40)
    to: str | None = Field(default=None, min_length=40, max_length=40)


class PlanParams(Params):
    """``checkpoints/plan-restore``: what restoring CHECKPOINT would do now."""

    root: str = Field(min_length=1)
    checkpoint: str = Field(min_length=40, max_length=40)
    expected_after: str | None = Field(default=None, min_length=40, max_length=40)


async def list_checkpoints(app: App, params: ListParams) -> list[Checkpoint]:
    """Handler of ``checkpoints/list``."""
    cp = app.checkpoints.for_root(params.root)
    return await anyio.to_thread.run_sync(cp.history, params.limit)


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
