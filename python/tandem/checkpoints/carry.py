"""Carry a session's checkpoints from an old root's store to a new root's.

The store is keyed by the root (`layout.workspace_key`), so after a session's
folder moves its earlier checkpoints live in the old root's store. `carry`
copies them: one ``git fetch`` from the old private git dir into the new one,
of the session's refs only (``refs/tandem/cp/<session>/*``). A fetch, not a
copy of object files or an ``alternates`` link: it moves only the objects
those refs reach, verifies them, writes them as one pack and updates the refs
last, so a kill at any moment leaves the new store either without the refs
or with complete ones; and the old store may be pruned later without harm
(alternates would make the new store depend on it). Running it again fetches
nothing new: it is idempotent, so there is no "already carried" marker (one
would skip the checkpoints made since, when a session moves back and forth).
The new store also accepts what the old one accepted: a session moved twice
keeps the checkpoints of its first root.

Both sides are our private stores. The old store's folder is checked before
any git runs: it must be a real folder (no symlink) inside the checkpoints
folder of TANDEM_HOME, owned by us; anything else is refused (``invalid``).
git runs with `Git`'s hardened environment (no global/system config, no
hooks, no prompt), so no program chosen by a workspace runs.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tandem import faults
from tandem.checkpoints.git import Git
from tandem.checkpoints.layout import Layout
from tandem.checkpoints.refs import CP_REFS, check_owner
from tandem.paths import checkpoints_dir
from tandem.protocol.base import TandemError


def _checked_store(home: Path, layout: Layout) -> Path | None:
    """LAYOUT's git dir when it is a safe private store; None when absent."""
    base = checkpoints_dir(home)
    for p in (layout.dir, layout.git_dir):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise TandemError("invalid", f"checkpoint store is not a real folder: {p}")
        if st.st_uid != os.getuid():
            raise TandemError("invalid", f"checkpoint store is not ours: {p}")
    if layout.dir.parent.resolve() != base.resolve():
        raise TandemError("invalid", f"checkpoint store outside {base}: {layout.dir}")
    return layout.git_dir


def carry(home: Path, old_root: Path, new_root: Path, session: str) -> int:
    """Fetch SESSION's checkpoint refs from OLD_ROOT's store into NEW_ROOT's.

    Returns how many of the session's refs the new store holds afterwards.
    Idempotent and crash-safe (see the module docstring).
    """
    if not isinstance(old_root, Path) or not isinstance(new_root, Path):
        raise TandemError("invalid", "carry: roots must be paths")
    if not old_root.is_absolute() or not new_root.is_absolute():
        raise TandemError("invalid", "carry: roots must be absolute")
    owner = check_owner(session)
    old, new = Layout(home, old_root), Layout(home, new_root)
    if old.dir == new.dir:
        return _count(Git(new.git_dir), owner) if (new.git_dir / "HEAD").exists() else 0
    src = _checked_store(home, old)
    git = Git(new.git_dir)
    with new.locked():
        new.ensure(git)
        if src is None:
            return _count(git, owner)
        # Recorded before the fetch: a carried ref is always readable here,
        # and so is one the old store had itself carried from an earlier root.
        new.add_carried_roots([str(old_root), *old.carried_roots()])
        spec = f"+{CP_REFS}{owner}/*:{CP_REFS}{owner}/*"
        # A local path: git's own upload-pack runs, under our hardened env.
        git.run(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                 "--no-auto-gc", "--", str(src), spec])
        faults.point("carry.fetched")
        return _count(git, owner)


def _count(git: Git, owner: str) -> int:
    out = git.out(["for-each-ref", "--format=%(refname)", f"{CP_REFS}{owner}/"])
    return len([line for line in out.splitlines() if line])
