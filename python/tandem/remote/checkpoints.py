"""Checkpoints of a remote workspace: its mirror, captured by the local checkpoint engine.

`RemoteCheckpoints` is the engine's `Checkpoints` for a session with a remote
target: before a turn it syncs the session's mirror (`tandem.remote.mirror`)
from the server and snapshots it with the one `CheckpointService`; after the
turn it syncs again, snapshots and diffs, so the turn's patch, View changes
and the Rewind plan are the same records as for a local turn. The summary
carries a ``remote`` part naming the host, the working dir and the mirror's
gaps (what the archive leaves out). `tandem.remote.by_session` chooses per
session: a remote target → `RemoteCheckpoints`, else the local one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import anyio.to_thread

from tandem.checkpoints.hooks import AfterTurn, Checkpoints
from tandem.checkpoints.service import CheckpointService
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import MirrorGapRecord, MirrorPatch
from tandem.providers.base import TurnResult
from tandem.remote.mirror import Mirror, MirrorSync, mirror_scope
from tandem.remote.push import PushResult, PushState, push, push_pending, save_pending
from tandem.remote.service import RemoteService


class RemoteCheckpoints(Checkpoints):
    """Pre- and post-turn checkpoints of a session's remote working dir, through LOCAL.

    LOCAL is the `Checkpoints` that snapshots a root (`GitCheckpoints`); it is
    pointed at the mirror's root, never at the project.
    """

    def __init__(self, local: Checkpoints, remote: RemoteService, home: Path,
                 store: CheckpointService,
                 settled: Callable[[str], bool] | None = None) -> None:
        self.local = local
        self.store = store
        self.remote = remote
        self.home = home
        self._open: dict[str, tuple[str, MirrorSync]] = {}
        """Checkpoint id → (session, its before-sync) for turns in flight."""
        self._locks: dict[str, asyncio.Lock] = {}
        self.settled: Callable[[str], bool] = settled or (lambda _session: True)
        """Whether SESSION has no rewind a crash left unsettled (the app opens the journal,
        which settles it); until it has, nothing is pushed or synced."""

    def mirror(self, session: str) -> Mirror:
        """The mirror of SESSION's current target (see `mirror_scope`)."""
        target = self.remote.target(session)
        if target is None:
            raise TandemError("not-found", f"session {session} has no remote target")
        return Mirror(self.home, session, mirror_scope(target.url, target.resolved_working_dir))

    def lock(self, session: str) -> asyncio.Lock:
        """Serialises SESSION's syncs (a turn's and a Rewind's)."""
        return self._locks.setdefault(session, asyncio.Lock())

    async def sync(self, session: str) -> tuple[Mirror, MirrorSync]:
        """Bring SESSION's mirror up to date (first pushing a Rewind's leftovers)."""
        found = self.remote.session_client(session)
        if found is None:
            raise TandemError("not-found", f"session {session} has no remote target")
        target, client = found
        mirror = Mirror(self.home, session,
                        mirror_scope(target.url, target.resolved_working_dir))
        if not self.settled(session):
            await client.aclose()
            raise TandemError("busy", f"An interrupted rewind of session {session} is not "
                              "settled yet; nothing was sent to the server")
        async with self.lock(session), client:
            # A restore of the mirror a crash interrupted goes back first: its half-restored
            # files must never be pushed (once rolled back, the mirror is what the server has).
            cp = self.store.for_root(mirror.ensure())
            await anyio.to_thread.run_sync(cp.recover)
            left = await push_pending(mirror, client)
            if left is not None and left.failed:
                raise TandemError(
                    "remote-failed",
                    f"Files of an earlier Rewind are still not back on {target.host}: "
                    f"{', '.join(left.failed)} ({'; '.join(left.errors)}); nothing was synced "
                    "from the server, so its copies do not overwrite the rewound files")
            try:
                synced = await mirror.sync(client, target.resolved_working_dir)
            except TandemError as e:  # which host, for the user with several
                raise TandemError(e.code, f"Checkpoint of {target.host}:"
                                  f"{target.resolved_working_dir}: {e.message}", e.data) from e
        return mirror, synced

    def record_push(self, session: str, working_dir: str, paths: list[str]) -> None:
        """Record PATHS as to be made equal to SESSION's mirror, before any of its files move.

        What a crash leaves recorded is pushed before the session's next sync."""
        save_pending(self.mirror(session), PushState(working_dir=working_dir, paths=paths))

    async def push(self, session: str, working_dir: str, paths: list[str]) -> PushResult:
        """Make PATHS of SESSION's WORKING_DIR on its server equal to its mirror now."""
        found = self.remote.session_client(session)
        if found is None:
            raise TandemError("not-found", f"session {session} has no remote target")
        _, client = found
        async with self.lock(session), client:
            return await push(self.mirror(session), client,
                              PushState(working_dir=working_dir, paths=paths))

    async def background_done(self) -> None:
        """Wait for the mirror store's maintenance (LOCAL's)."""
        await self.local.background_done()

    async def before(self, root: Path, session: str, turn: int) -> str | None:
        """Sync the mirror and snapshot it (ROOT, the local project, is not touched)."""
        mirror, synced = await self.sync(session)
        checkpoint = await self.local.before(mirror.root, session, turn)
        if checkpoint is not None:
            self._open[checkpoint] = (session, synced)
        return checkpoint

    async def after(self, root: Path, checkpoint: str | None, result: TurnResult) -> AfterTurn:
        """Sync, snapshot and diff the mirror against CHECKPOINT."""
        if checkpoint is None or checkpoint not in self._open:
            return AfterTurn()
        session, _ = self._open.pop(checkpoint)
        mirror, synced = await self.sync(session)
        found = await self.local.after(mirror.root, checkpoint, result)
        if found.patch is None:
            return found
        target = self.remote.target(session)
        where = MirrorPatch(
            host=target.host if target else None, working_dir=synced.working_dir,
            mirror=str(mirror.root),
            gaps=[MirrorGapRecord(path=g.path, reason=g.reason, detail=g.detail)
                  for g in synced.gaps])
        return replace(found, patch=found.patch.model_copy(update={"remote": where}))
