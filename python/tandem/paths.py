"""Where tandem keeps its state: the ``TANDEM_HOME`` layout (DESIGN.md §4).

The state is private: `prepare_home` makes ``TANDEM_HOME`` 0700 and removes
group and other bits from everything below it (existing homes from older
versions, files a user copied in); new files are created private by
`tandem.store.fsutil`.
"""

from __future__ import annotations

import os
from pathlib import Path

from tandem.store import fsutil


def tandem_home() -> Path:
    """Return the state root: ``$TANDEM_HOME``, else ``$XDG_STATE_HOME/tandem``."""
    explicit = os.environ.get("TANDEM_HOME")
    if explicit:
        return Path(explicit).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "tandem"


def prepare_home(home: Path | None = None, limit: int = fsutil.WALK_LIMIT) -> tuple[int, bool]:
    """Create HOME (default `tandem_home`) private and tighten every mode below it.

    The walk is bounded by LIMIT entries; HOME itself is made 0700 first, so
    what lies beyond the bound is unreachable by others anyway. Returns
    (entries changed, whether the walk was complete).
    """
    home = home or tandem_home()
    fsutil.private_dir(home)
    return fsutil.tighten_tree(home, limit)


def sessions_dir(home: Path | None = None) -> Path:
    """Folder of session journals, one sub-folder per cwd slug."""
    return (home or tandem_home()) / "sessions"


def workspaces_dir(home: Path | None = None) -> Path:
    """Folder of workspace records and the workspace registry."""
    return (home or tandem_home()) / "workspaces"


def checkpoints_dir(home: Path | None = None) -> Path:
    """Folder of the private checkpoint repositories."""
    return (home or tandem_home()) / "checkpoints"


def logs_dir(home: Path | None = None) -> Path:
    """Folder of backend logs."""
    return (home or tandem_home()) / "logs"


def run_dir(home: Path | None = None) -> Path:
    """Folder of the records of running backends' child processes."""
    return (home or tandem_home()) / "run"
