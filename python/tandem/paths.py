"""Where tandem keeps its state: the ``TANDEM_HOME`` layout (docs/sessions.md).

The bottom of the package graph: it imports no other tandem module. Making
the state private is `tandem.store.home`'s.
"""

from __future__ import annotations

import os
from pathlib import Path


def tandem_home() -> Path:
    """Return the state root: ``$TANDEM_HOME``, else ``$XDG_STATE_HOME/tandem``."""
    explicit = os.environ.get("TANDEM_HOME")
    if explicit:
        return Path(explicit).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "tandem"


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


def images_dir(home: Path | None = None) -> Path:
    """Folder of the images sent with requests, by content digest."""
    return (home or tandem_home()) / "images"
