"""Checkpoints of a remote workspace: its mirror, captured by the local checkpoint engine.

`RemoteCheckpoints` is the engine's `Checkpoints` for a session with a remote
target: before a turn it syncs the session's mirror (`tandem.remote.mirror`)
from the server and snapshots it with the one `CheckpointService`; after the
turn it syncs again, snapshots and diffs, so the turn's patch, View changes
and the Rewind plan are the same records as for a local turn. The summary
carries a ``remote`` part naming the host, the working dir and the mirror's
gaps (what the archive leaves out). `CheckpointsBySession` chooses per
session: a remote target → `RemoteCheckpoints`, else the local one.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tandem.checkpoints.hooks import Checkpoints
from tandem.protocol.base import TandemError
from tandem.providers.base import TurnResult
from tandem.remote.mirror import Mirror, MirrorSync
from tandem.remote.push import push_pending
from tandem.remote.service import RemoteService


class RemoteCheckpoints(Checkpoints):
    """Pre- and post-turn checkpoints of a session's remote working dir, through LOCAL.

    LOCAL is the `Checkpoints` that snapshots a root (`GitCheckpoints`); it is
    pointed at the mirror's root, never at the project.
    """

    def __init__(self, local: Checkpoints, remote: RemoteService, home: Path) -> None:
        self.local = local
        self.remote = remote
        self.home = home
        self._open: dict[str, tuple[str, MirrorSync]] = {}
        """Checkpoint id → (session, its before-sync) for turns in flight."""
        self._locks: dict[str, asyncio.Lock] = {}

    def mirror(self, session: str) -> Mirror:
        """SESSION's mirror."""
        return Mirror(self.home, session)

    def lock(self, session: str) -> asyncio.Lock:
        """Serialises SESSION's syncs (a turn's and a Rewind's)."""
        return self._locks.setdefault(session, asyncio.Lock())

    async def sync(self, session: str) -> tuple[Mirror, MirrorSync]:
        """Bring SESSION's mirror up to date (first pushing a Rewind's leftovers)."""
        found = self.remote.session_client(session)
        if found is None:
            raise TandemError("not-found", f"session {session} has no remote target")
        target, client = found
        mirror = self.mirror(session)
        async with self.lock(session), client:
            mirror.ensure()
            left = await push_pending(mirror, client)
            if left is not None and left.failed:
                raise TandemError(
                    "remote-failed",
                    f"Files of an earlier Rewind are still not back on {target.host}: "
                    f"{', '.join(left.failed)} ({'; '.join(left.errors)}); the turn did not "
                    "start, so they are not overwritten by the server's copies")
            synced = await mirror.sync(client, target.resolved_working_dir)
        return mirror, synced

    async def before(self, root: Path, session: str, turn: int) -> str | None:
        """Sync the mirror and snapshot it (ROOT, the local project, is not touched)."""
        mirror, synced = await self.sync(session)
        checkpoint = await self.local.before(mirror.root, session, turn)
        if checkpoint is not None:
            self._open[checkpoint] = (session, synced)
        return checkpoint

    async def after(self, root: Path, checkpoint: str | None, result: TurnResult
                    ) -> tuple[dict[str, Any] | None, str | None]:
        """Sync, snapshot and diff the mirror against CHECKPOINT."""
        if checkpoint is None or checkpoint not in self._open:
            return None, None
        session, _ = self._open.pop(checkpoint)
        mirror, synced = await self.sync(session)
        summary, completeness = await self.local.after(mirror.root, checkpoint, result)
        if summary is not None:
            target = self.remote.target(session)
            summary["remote"] = {
                "host": target.host if target else None,
                "working_dir": synced.working_dir,
                "mirror": str(mirror.root),
                "gaps": [g.model_dump() for g in synced.gaps]}
        return summary, completeness


class CheckpointsBySession(Checkpoints):
    """The engine's `Checkpoints`: REMOTE for a session with a remote target, else LOCAL."""

    def __init__(self, local: Checkpoints, remote: RemoteCheckpoints) -> None:
        self.local = local
        self.remote = remote
        self._by_checkpoint: dict[str, Checkpoints] = {}

    def for_session(self, session: str) -> Checkpoints:
        """Which checkpoints SESSION's turns take."""
        return self.remote if self.remote.remote.target(session) is not None else self.local

    async def before(self, root: Path, session: str, turn: int) -> str | None:
        """Take SESSION's pre-turn checkpoint where its files are."""
        chosen = self.for_session(session)
        checkpoint = await chosen.before(root, session, turn)
        if checkpoint is not None:
            self._by_checkpoint[checkpoint] = chosen
        return checkpoint

    async def after(self, root: Path, checkpoint: str | None, result: TurnResult
                    ) -> tuple[dict[str, Any] | None, str | None]:
        """The patch since CHECKPOINT, from the side that took it."""
        chosen = self._by_checkpoint.pop(checkpoint, self.local) if checkpoint else self.local
        return await chosen.after(root, checkpoint, result)
