"""A file's text as it was before a turn (for ediff against the file now)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tandem.checkpoints.checkpointer import Checkpointer
from tandem.checkpoints.reverting import change_of, entry_in
from tandem.checkpoints.service import CheckpointService
from tandem.protocol.base import TandemError
from tandem.protocol.review import Before
from tandem.review.revert import turn_checkpoints
from tandem.sessions.service import SessionService
from tandem.store.journal import Journal
from tandem.turns.engine import run_blocking

MAX_TEXT = 8 * 1024 * 1024
"""Largest file compared as text."""


async def before(sessions: SessionService, checkpoints: CheckpointService,
                 root_of: Callable[[Journal], Path], session: str, turn: int,
                 path: str) -> Before:
    """PATH (its name after TURN) of SESSION as it was before TURN.

    ROOT_OF gives the root the session's checkpoints are of (the project, or
    a remote session's mirror).
    """
    journal = sessions.journal(session)
    base, end = turn_checkpoints(sessions.index(journal), turn)
    cp = checkpoints.for_root(root_of(journal))
    result: Before = await run_blocking(_before, cp, base, end, path)
    return result


def _before(cp: Checkpointer, base: str, end: str, path: str) -> Before:
    change = change_of(cp, cp.get(base).tree, cp.get(end).tree, path)
    old = change.old_path or path
    entry = entry_in(cp.git, cp.get(base).tree, old)
    if entry is None:
        return Before(root=str(cp.root), path=old, exists=False, text="")
    data = b"".join(blob for _, blob in cp.git.blobs([entry[1]]))
    if b"\0" in data[:8192] or len(data) > MAX_TEXT:
        raise TandemError("invalid", f"{old} is binary or too large to compare as text")
    return Before(root=str(cp.root), path=old, exists=True,
                  text=data.decode("utf-8", "replace"))
