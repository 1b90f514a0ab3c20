"""A confined walk of a workspace folder, for listing, globbing and grep.

Every entry is checked where it really leads: a symlink is resolved and
skipped when it points outside the root; a symlinked folder is never
descended into (its target is either outside, or already walked, or a
cycle); FIFOs, sockets and devices are skipped. Each skipped entry is named
with its reason, so the model knows what it did not see.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tandem.tools.budget import Deadline
from tandem.tools.fsread import special_kind
from tandem.tools.paths import inside

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv"})
"""Folders that listing and grep do not descend into (noise, or huge)."""
OUTSIDE = "link outside the workspace root"
MAX_NAMED = 20
"""Skipped entries named in a note; the others are counted."""


@dataclass
class Skipped:
    """Entries a walk or a search left out, with the reason for each."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, shown: str, why: str) -> None:
        """Record that SHOWN was left out because of WHY."""
        self.items.append((shown, why))

    def note(self) -> str:
        """One note naming what was skipped ("" when nothing was)."""
        if not self.items:
            return ""
        named = ", ".join(f"{name} ({why})" for name, why in self.items[:MAX_NAMED])
        more = len(self.items) - MAX_NAMED
        tail = f" and {more} more" if more > 0 else ""
        return f"[skipped {len(self.items)}: {named}{tail}]"


@dataclass(frozen=True)
class Entry:
    """One entry a walk yields: its path as seen, where it leads, what it is."""

    rel: str
    """Path relative to the walked root, ``/``-separated."""
    real: Path
    """The resolved path (a link inside the root yields its target here)."""
    is_dir: bool


def _classify(path: str, real_root: Path) -> tuple[Path | None, str | None, bool]:
    """(resolved path, reason to skip, is a folder) for the directory entry at PATH."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        real = Path(os.path.realpath(path))
        if not inside(real_root, real):
            return None, OUTSIDE, False
        try:
            target = os.stat(real).st_mode
        except OSError:
            return None, "broken link", False
        if stat.S_ISDIR(target):
            return None, "link to a folder, not followed", False
        kind = special_kind(target)
        return (None, kind, False) if kind else (real, None, False)
    if stat.S_ISDIR(st.st_mode):
        return Path(path), None, True
    kind = special_kind(st.st_mode)
    return (None, kind, False) if kind else (Path(path), None, False)


def walk(
    real_root: Path,
    top: Path,
    deadline: Deadline,
    skipped: Skipped,
    *,
    max_depth: int | None = None,
    want: Callable[[str], bool] | None = None,
    name_skipped: Callable[[str], bool] | None = None,
) -> Iterator[Entry]:
    """Entries under TOP (itself inside REAL_ROOT), each folder's files first, sorted.

    Folders deeper than MAX_DEPTH (1: TOP's own entries) are not read. WANT,
    given a relative path, filters files (not folders); NAME_SKIPPED (default
    WANT) says which skipped entries are recorded in SKIPPED.
    """
    name_skipped = name_skipped or want
    stack: list[tuple[Path, str, int]] = [(top, "", 1)]
    while stack:
        folder, prefix, depth = stack.pop()
        deadline.check()
        try:
            with os.scandir(folder) as it:
                names = sorted(e.name for e in it)
        except OSError as exc:
            skipped.add(prefix.rstrip("/") or ".", exc.strerror or "unreadable")
            continue
        subdirs: list[tuple[Path, str, int]] = []
        for name in names:
            deadline.check()  # per entry: a costly glob filter runs per entry too
            rel = prefix + name
            try:
                real, why, is_dir = _classify(os.path.join(folder, name), real_root)
            except OSError as exc:
                real, why, is_dir = None, exc.strerror or "unreadable", False
            if is_dir:
                if name in SKIP_DIRS:
                    continue
                assert real is not None
                yield Entry(rel, real, True)
                if max_depth is None or depth < max_depth:
                    subdirs.append((real, rel + "/", depth + 1))
                continue
            if real is None:
                if name_skipped is None or name_skipped(rel):
                    skipped.add(rel, why or "skipped")
            elif want is None or want(rel):
                yield Entry(rel, real, False)
        stack.extend(reversed(subdirs))
