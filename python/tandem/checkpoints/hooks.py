"""The checkpoint hooks the turn engine calls before and after each turn.

They live here, below the engine, so that every way of taking a turn's
checkpoints (the project's store, a remote session's mirror) implements
one interface without importing the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tandem.protocol.checkpoints import Completeness, PatchSummary
from tandem.providers.base import TurnResult


@dataclass(frozen=True)
class AfterTurn:
    """What the post-turn checkpoint found: the turn's patch, or why there is none."""

    patch: PatchSummary | None = None
    """None: no pre-turn checkpoint (or ERROR)."""
    error: str | None = None
    """Why the patch could not be taken; the turn still ends, its patch incomplete."""

    @property
    def completeness(self) -> Completeness | None:
        """The patch's completeness (incomplete after an ERROR, None without a patch)."""
        if self.error is not None:
            return "incomplete"
        return self.patch.completeness if self.patch is not None else None

    def recorded(self) -> dict[str, Any] | None:
        """The ``patch`` of the turn's ``turn_end`` entry, as the journal holds it."""
        if self.error is not None:
            return {"error": self.error}
        return self.patch.recorded() if self.patch is not None else None

    @classmethod
    def read(cls, value: object) -> AfterTurn:
        """The patch a journal's ``turn_end`` recorded as VALUE, typed again."""
        if isinstance(value, dict) and isinstance(value.get("error"), str):
            return cls(error=value["error"])
        return cls(patch=PatchSummary.read(value))


class Checkpoints:
    """The checkpoint hooks the engine calls; the default records none."""

    async def before(self, root: Path, session: str, turn: int) -> str | None:
        """Take the pre-turn checkpoint of ROOT; return its id (None: no checkpoint)."""
        return None

    async def after(self, root: Path, checkpoint: str | None, result: TurnResult) -> AfterTurn:
        """The turn's patch since CHECKPOINT (none without a checkpoint)."""
        return AfterTurn()

    async def background_done(self) -> None:
        """Wait for the work these hooks started off the turn's path (store upkeep)."""
