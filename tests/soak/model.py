"""The reference model: what the backend acknowledged, per session and project.

The model knows only what came over the wire: an entry is acknowledged when
its ``entry`` event arrived (the backend publishes it after the write), a
turn started when its ``turn-started`` event did. File names keep the
owners apart: ``t*.txt`` are written only by the model's tool calls (so only
tandem changes them: turns, rewinds, undos, reverts), ``o*.txt`` only by the
soak itself from outside.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Project:
    """One git project with its one session."""

    name: str
    root: Path
    sid: str = ""
    moves: int = 0
    excused: set[str] = field(default_factory=set)
    """Tool files a documented limit may leave unlike the journal (a revert killed
    between its files and its entry: docs/checkpoints.md, Limits)."""


@dataclass
class Model:
    """Acknowledged entries and started turns, by session."""

    acked: dict[str, dict[int, str]] = field(default_factory=dict)
    started: dict[str, set[int]] = field(default_factory=dict)

    def take(self, events: list[dict[str, Any]]) -> None:
        """Fold EVENTS (as the client received them) into the model."""
        for e in events:
            sid = str(e.get("session"))
            kind = e.get("kind")
            if kind == "entry":
                entry = e.get("entry") or {}
                seq, typ = entry.get("seq"), entry.get("type")
                if isinstance(seq, int) and isinstance(typ, str):
                    self.acked.setdefault(sid, {})[seq] = typ
            elif kind == "turn-started" and isinstance(e.get("turn"), int):
                self.started.setdefault(sid, set()).add(e["turn"])
        events.clear()
