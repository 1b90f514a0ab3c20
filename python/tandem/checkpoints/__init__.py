"""tandem.checkpoints: snapshots of a workspace root, patches, restore.

`Checkpointer` is the entry point; see docs/checkpoints.md.
"""

from tandem.checkpoints.checkpointer import DEFAULT_SIZE_CAP, Checkpointer
from tandem.checkpoints.restore import FileHook
from tandem.protocol.checkpoints import (
    Checkpoint,
    FileChange,
    Gap,
    Patch,
    PatchGap,
    RestoreGap,
    RestorePlan,
    RestoreResult,
)

__all__ = [
    "DEFAULT_SIZE_CAP",
    "Checkpoint",
    "Checkpointer",
    "FileChange",
    "FileHook",
    "Gap",
    "Patch",
    "PatchGap",
    "RestoreGap",
    "RestorePlan",
    "RestoreResult",
]
