"""Put the files one restore touched back to its backup, path by path, after a crash.

Used by `Checkpointer.undo_restore` and by the recovery of an interrupted
restore. The operations are recomputed from the two checkpoint ids (so
undoing twice is the same as once). A path is put back only when it is
exactly in the restore's target state (the restore wrote it); a path already
in the backup's state needs nothing; a path in a third state was changed
since by someone else and is left alone (and reported), never overwritten.
"""

from __future__ import annotations

from pathlib import Path

from tandem.checkpoints import diffing
from tandem.checkpoints.git import Git
from tandem.checkpoints.restore import Op, new_token, restore_ops, rollback, sweep_temp
from tandem.protocol.checkpoints import Checkpoint


def planned_ops(git: Git, backup: Checkpoint, target: Checkpoint) -> list[Op]:
    """Every operation a restore from BACKUP to TARGET could have done.

    Computed from the captures alone (no look at the disk): a file the
    restore created is on disk now, and must still count as one of its own.
    """
    changes = diffing.raw_changes(git, backup.tree, target.tree, renames=False)
    ops = restore_ops(None, changes, target.gaps, backup.gaps)
    return ops.deletes + ops.writes


def sweep(root: Path, ops: list[Op], token: str | None) -> list[str]:
    """Remove the temporary files restore TOKEN left beside the paths of OPS."""
    if not token:
        return []
    return sweep_temp(root, [op.path for op in ops], token)


def undo(
    git: Git,
    root: Path,
    ops: list[Op],
    now: Checkpoint,
    target: Checkpoint,
    backup: Checkpoint,
    token: str | None,
) -> tuple[list[str], list[str]]:
    """Bring each path of OPS still in TARGET's state back to BACKUP's; (put back, left).

    NOW is a capture of the files as they are (the safety checkpoint).
    Raises `RollbackFailed` when a path cannot be put back.
    """
    differs_from_target = {c.path for c in diffing.raw_changes(git, target.tree, now.tree,
                                                               renames=False)}
    differs_from_backup = {c.path for c in diffing.raw_changes(git, backup.tree, now.tree,
                                                               renames=False)}
    todo: list[Op] = []
    left: list[str] = []
    for op in ops:
        if op.path not in differs_from_backup and not diffing.covered(op.path, now.gaps):
            continue  # already as it was before the restore
        if op.path in differs_from_target or diffing.covered(op.path, now.gaps):
            left.append(op.path)  # changed since by someone else: not ours to overwrite
            continue
        todo.append(op)
    rollback(git, root, todo, [], token or new_token())
    return sorted(op.path for op in todo), sorted(left)
