"""Putting files back after a restore whose journal entry could not be written."""

from __future__ import annotations

from tandem.checkpoints.checkpointer import Checkpointer
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import RestoreResult
from tandem.turns.engine import run_blocking


async def put_back(cp: Checkpointer, done: RestoreResult, what: str = "rewind") -> None:
    """Undo a completed restore DONE: the files go back to its backup checkpoint.

    WHAT names the transaction (``rewind``, ``undo``) in the error.
    """
    try:
        await run_blocking(lambda: cp.restore(done.backup.id))
    except Exception as e:
        raise TandemError(
            "restore-failed",
            f"The {what} entry could not be written and putting the files back failed too "
            f"({e}); the files before the {what} are kept in checkpoint {done.backup.id}",
            {"backup": done.backup.id},
        ) from e
