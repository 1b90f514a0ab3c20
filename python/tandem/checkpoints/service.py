"""One `Checkpointer` per workspace root per backend process."""

from __future__ import annotations

import threading
from pathlib import Path

from tandem.checkpoints.checkpointer import DEFAULT_SIZE_CAP, Checkpointer
from tandem.checkpoints.layout import Layout
from tandem.lru import LRU


class CheckpointService:
    """The app's registry of checkpointers, keyed by resolved root."""

    def __init__(self, home: Path, size_cap: int = DEFAULT_SIZE_CAP) -> None:
        self.home = home
        self.size_cap = size_cap
        self._lock = threading.Lock()
        self._by_root: LRU[Path, Checkpointer] = LRU(64)
        """Roots in use (a dropped one is rebuilt on its next use: the store is on disk)."""

    def for_root(self, root: Path | str) -> Checkpointer:
        """The checkpointer of ROOT (validated and created on first use)."""
        key = Path(root).expanduser()
        if key.is_absolute():
            key = key.resolve()
            with self._lock:
                known = self._by_root.get(key)
            if known is not None:
                return known
        fresh = Checkpointer(self.home, Path(root), size_cap=self.size_cap)
        with self._lock:
            return self._by_root.setdefault(fresh.root, fresh)

    def settle_interrupted(self, root: Path | str) -> bool:
        """Roll back a restore a crash cut short in ROOT's store; True when there was one.

        Cheap when there is none (one ``stat``, no store created): it runs as
        each session is opened, so a revert or undo killed midway leaves no
        temporary file and no half-restored tree once the session is back.
        """
        try:
            resolved = Path(root).expanduser().resolve(strict=True)
        except (OSError, RuntimeError):
            return False  # a root that is gone has no files to put back
        if not resolved.is_dir():
            return False
        if not Layout(self.home.expanduser().resolve(), resolved).pending.exists():
            return False
        return self.for_root(resolved).recover()
