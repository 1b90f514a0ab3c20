"""The checkpoint hooks the turn engine calls before and after each turn.

They live here, below the engine, so that every way of taking a turn's
checkpoints (the project's store, a remote session's mirror) implements
one interface without importing the engine.
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

    async def background_done(self) -> None:
        """Wait for the work these hooks started off the turn's path (store upkeep)."""
