"""Keep a workspace's checkpoint store small: pack it, drop what nobody needs.

Runs after a turn ends (never during a snapshot: it takes the workspace
lock, and gives up at once when something else holds it):

* **pack** — as ``git gc --auto`` would: loose objects (each checkpoint
  writes a few dozen) are packed once there are `GC_AUTO` of them, with the
  refs, and packs are merged once there are `GC_PACKS`. The repository's own
  ``gc.auto`` stays 0, so no other git call packs on the turn's path.
* **prune** (at most every `PRUNE_EVERY` seconds, or when asked) — the refs
  of checkpoints whose session is gone (its journal was deleted), and of
  those past the retention setting, are deleted; then a full ``git gc``
  drops unreachable objects older than the grace period (``gc.pruneExpire``:
  an object younger than that survives, so a checkpoint dropped by mistake
  can still be recovered by hand for that long).

**dissociate** — a store that borrows its project's objects (a new parallel
tree's, `Layout.borrow`) gets them copied in and the link dropped on its
first pass, so a project removed later never breaks its checkpoints.

The private indexes hold blobs no commit may reference yet (a capture for a
diff or a plan writes objects but keeps no checkpoint): each index's tree is
kept by a ref ``refs/tandem/index/<name>`` before pruning, so pruning never
removes an object an index says is stored.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tandem.checkpoints import refs
from tandem.checkpoints.git import Git, GitError
from tandem.checkpoints.layout import Layout
from tandem.store.fsutil import touch_private

GC_AUTO = 2000
"""Loose objects (git's estimate) from which they are packed."""
GC_PACKS = 20
"""Packs from which they are merged into one."""
PRUNE_EVERY = 3600.0
"""Seconds between two pruning passes of one workspace."""
MIN_AGE = 3600
"""Seconds: a checkpoint younger than this is never pruned for a gone session
(its session's journal may be still being created by another process)."""

LiveSessions = Callable[[], set[str]]
"""Returns the ids of every session whose journal exists now."""


@dataclass(frozen=True)
class Retention:
    """How long checkpoints are kept (None: as long as their session is)."""

    keep_turns: int | None = None
    """Per session, keep the checkpoints of its newest N turns."""
    keep_days: int | None = None
    """Keep checkpoints at most N days old."""
    grace: str = "2.weeks.ago"
    """Unreachable objects younger than this (git date) are not pruned."""


@dataclass
class MaintenanceResult:
    """What one maintenance pass did."""

    dropped: list[str] = field(default_factory=list)
    """Commit ids of the checkpoints whose refs were deleted."""
    pruned: bool = False
    """A full gc with pruning ran."""


def maintain(
    git: Git,
    layout: Layout,
    retention: Retention,
    live: LiveSessions | None,
    *,
    prune_now: bool = False,
    now: float | None = None,
) -> MaintenanceResult | None:
    """One maintenance pass over LAYOUT's store; None when the workspace was busy."""
    with layout.try_locked() as held:
        if not held:
            return None
        result = MaintenanceResult()
        dissociate(git, layout)
        clock = time.time() if now is None else now
        if prune_now or _due(layout, clock):
            touch_private(layout.maintained)
            doomed = _doomed(refs.kept(git), retention, live, clock)
            if doomed or prune_now:
                refs.delete(git, doomed)
                result.dropped = [r.commit for r in doomed]
                _keep_indexes(git, layout)
                git.run(["-c", f"gc.pruneExpire={retention.grace}", "gc", "--quiet"])
                result.pruned = True
                return result
        pack(git)
        return result


def dissociate(git: Git, layout: Layout) -> bool:
    """Copy every object the store borrows into it and drop the link; True when it did.

    A new parallel tree's store reads its project's objects in place
    (`Layout.borrow`); the project may be removed, or pruned, later. So the
    first maintenance pass packs everything the store's refs and indexes
    reach, borrowed objects included (``repack -a`` without ``-l``; each
    index's tree kept by a ref first, `_keep_indexes`), and only then
    removes the alternates file. A pass cut short leaves the link, so the
    next one does it again.
    """
    if not layout.alternates.exists():
        return False
    _keep_indexes(git, layout)
    git.run(["repack", "-a", "-d", "-q", "--keep-unreachable"])
    layout.alternates.unlink()
    return True


def pack(git: Git) -> None:
    """Pack loose objects and refs once there are many; merge packs once there are many.

    Like ``git gc --auto``, but never pruning (that needs the indexes kept,
    `_keep_indexes`) and counting every loose object, not a sample.
    """
    stats = dict(
        line.split(": ", 1) for line in git.out(["count-objects", "-v"]).splitlines()
        if ": " in line
    )
    if int(stats.get("count", 0)) >= GC_AUTO:
        git.run(["repack", "-d", "-q"])
        git.run(["pack-refs", "--all", "--prune"])
    if int(stats.get("packs", 0)) + 1 >= GC_PACKS:
        # --keep-unreachable: objects only an index holds stay (see above).
        git.run(["repack", "-a", "-d", "-q", "--keep-unreachable"])


def _due(layout: Layout, clock: float) -> bool:
    try:
        return clock - layout.maintained.stat().st_mtime >= PRUNE_EVERY
    except FileNotFoundError:
        touch_private(layout.maintained)  # the first pass of a store only starts the clock
        return False


def _doomed(
    kept: list[refs.KeptRef], retention: Retention, live: LiveSessions | None, clock: float
) -> list[refs.KeptRef]:
    """The refs to delete: gone sessions' (old enough), and those past retention."""
    alive = live() if live is not None else None  # after listing: see MIN_AGE
    out: list[refs.KeptRef] = []
    turns_seen: dict[str, list[int]] = {}
    for ref in kept:  # newest first
        if alive is not None and ref.owner != refs.NO_OWNER and ref.owner not in alive:
            if clock - ref.created >= MIN_AGE:
                out.append(ref)
            continue
        if retention.keep_days is not None and clock - ref.created > retention.keep_days * 86400:
            out.append(ref)
            continue
        if retention.keep_turns is not None and ref.owner != refs.NO_OWNER:
            seen = turns_seen.setdefault(ref.owner, [])
            if ref.turn is not None and ref.turn not in seen:
                seen.append(ref.turn)
            if len(seen) > retention.keep_turns:
                out.append(ref)
    return out


def _keep_indexes(git: Git, layout: Layout) -> None:
    """Keep each private index's objects reachable; drop an index that is already damaged."""
    for index in sorted(layout.index_dir.glob("*")):
        if not index.is_file() or index.name.startswith("graft-"):
            continue
        ref = f"refs/tandem/index/{index.name}"
        try:
            tree = git.out(["write-tree"], index=index)
        except GitError:
            os.unlink(index)  # the next capture re-hashes this region
            git.run(["update-ref", "-d", ref], check=False)
            continue
        git.run(["update-ref", ref, tree])
