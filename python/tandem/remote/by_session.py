"""The engine's `Checkpoints`, chosen per session: the mirror's for a remote session.

Kept apart from `tandem.remote.checkpoints` so that a backend whose sessions
are all local never imports the remote code: the remote side is built on
first use (REMOTE is a factory) and a session's side is told by its target
file alone (`tandem.remote.target_file.has_target`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tandem.checkpoints.hooks import AfterTurn, Checkpoints
from tandem.once import Once
from tandem.providers.base import TurnResult

if TYPE_CHECKING:
    from tandem.remote.checkpoints import RemoteCheckpoints


class CheckpointsBySession(Checkpoints):
    """REMOTE's checkpoints for a session with a remote target, else LOCAL's.

    ATTACHED tells whether a session has a target file; REMOTE builds the
    `RemoteCheckpoints` (which reads and checks that file) on first use.
    """

    def __init__(self, local: Checkpoints, remote: Once[RemoteCheckpoints],
                 attached: Callable[[str], bool]) -> None:
        self.local = local
        self._remote = remote
        self._attached = attached
        self._by_checkpoint: dict[str, Checkpoints] = {}

    @property
    def remote(self) -> RemoteCheckpoints:
        """The remote side (built with its first use)."""
        return self._remote.get()

    async def background_done(self) -> None:
        """Wait for both sides' work off the turn's path (a remote side never built has none)."""
        await self.local.background_done()
        if self._remote.built:
            await self.remote.background_done()

    def for_session(self, session: str) -> Checkpoints:
        """Which checkpoints SESSION's turns take."""
        if not self._attached(session):
            return self.local
        remote = self.remote
        return remote if remote.remote.target(session) is not None else self.local

    async def before(self, root: Path, session: str, turn: int) -> str | None:
        """Take SESSION's pre-turn checkpoint where its files are."""
        chosen = self.for_session(session)
        checkpoint = await chosen.before(root, session, turn)
        if checkpoint is not None:
            self._by_checkpoint[checkpoint] = chosen
        return checkpoint

    async def after(self, root: Path, checkpoint: str | None, result: TurnResult) -> AfterTurn:
        """The patch since CHECKPOINT, from the side that took it."""
        chosen = self._by_checkpoint.pop(checkpoint, self.local) if checkpoint else self.local
        return await chosen.after(root, checkpoint, result)
