"""Which fault a soak injects: a point of the backend's seam and what happens there."""

from __future__ import annotations

import random

from tandem.faults import POINTS

ACTIONS = (("kill", 70), ("enospc", 12), ("eio", 8), ("delay:0.3", 10))
"""Actions and their weights: mostly a kill, sometimes a failed write or a slow disk."""

WRITE_POINTS = ("journal.write", "journal.fsync", "atomic.fsync", "atomic.rename",
                "restore.file", "capture.mid")
"""The points where an OSError is what a full or failing disk would raise: the journal's
writer, atomic writes, and the checkpoints' (a restored file, a capture's index)."""


def choose(seed: int) -> str:
    """One ``POINT=ACTION@N`` for ``TANDEM_FAULTS``, from SEED."""
    r = random.Random(seed)
    action = r.choices([a for a, _ in ACTIONS], [w for _, w in ACTIONS])[0]
    points = WRITE_POINTS if action in ("enospc", "eio") else POINTS
    point = r.choice(points)
    nth = r.randint(1, 4) if point.startswith(("journal", "capture")) else r.randint(1, 2)
    return f"{point}={action}@{nth}"
