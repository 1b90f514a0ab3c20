"""The checkpoint hooks a turn engine calls before and after each turn.

Here, not in ``turns``, so that a checkpoint side of its own (a remote
session's mirror, ``tandem.remote.checkpoints``) implements them without
importing the engine that calls them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tandem.providers.base import TurnResult


class Checkpoints:
    """The checkpoint hooks the engine calls; the default records none."""

    async def before(self, root: Path, session: str, turn: int) -> str | None:
        """Take the pre-turn checkpoint of ROOT; return its id (None: no checkpoint)."""
        return None

    async def after(self, root: Path, checkpoint: str | None, result: TurnResult
                    ) -> tuple[dict[str, Any] | None, str | None]:
        """Return (patch summary, completeness) of the turn since CHECKPOINT."""
        return None, None
