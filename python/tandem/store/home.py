"""The state root made private: ``TANDEM_HOME`` 0700 and nothing below it loose.

`prepare_home` makes ``TANDEM_HOME`` 0700 and removes group and other bits
from everything below it (existing homes from older versions, files a user
copied in); new files are created private by `tandem.store.fsutil`.
"""

from __future__ import annotations

import os
from pathlib import Path

from tandem.paths import tandem_home
from tandem.store import fsutil

PRIVATE_MARKER = ".private-v2"
"""Written in ``TANDEM_HOME`` once a complete walk made everything private:
from then on tandem creates every file private, so starts skip the walk.
The number goes up when a version stops leaving some file loose, so a home
an older version marked is walked once more (v1 left moved journals, the
listing cache and rewind folders open)."""


def secure_home(home: Path | None = None) -> Path:
    """Create HOME (default `tandem_home`) 0700, or make it 0700; return it.

    Cheap, and enough on its own: nothing below a 0700 folder is reachable
    by other users, whatever its mode.
    """
    home = home or tandem_home()
    fsutil.private_dir(home)
    if os.stat(home).st_mode & 0o077:
        os.chmod(home, fsutil.PRIVATE_DIR_MODE)
    return home


def prepare_home(home: Path | None = None, limit: int = fsutil.WALK_LIMIT,
                 force: bool = False) -> tuple[int, bool]:
    """`secure_home`, then remove group and other bits from everything below it.

    The walk is bounded by LIMIT entries and skipped once a complete walk
    left `PRIVATE_MARKER` (unless FORCE). Returns (entries changed, whether
    the walk was complete).
    """
    home = secure_home(home)
    marker = home / PRIVATE_MARKER
    if marker.exists() and not force:
        return 0, True
    changed, complete = fsutil.tighten_tree(home, limit)
    if complete:
        fsutil.atomic_write(marker, b"every entry was made private\n")
    return changed, complete
