"""Where a session's remote target file is, and whether it has one, without pydantic.

Every turn asks whether its session runs remotely; a session with no target
file needs nothing of `tandem.remote` beyond this answer (start-up:
``tandem ask`` imports no remote code). Reading the file is `tandem.remote.targets`.
"""

from __future__ import annotations

import re
from pathlib import Path

from tandem.protocol.errors import TandemError

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def targets_dir(home: Path) -> Path:
    """Folder of the target files under the state root HOME."""
    return home / "remote" / "targets"


def target_file(home: Path, session: str) -> Path:
    """The target file of SESSION under HOME; TandemError ``invalid`` for a bad id."""
    if not isinstance(session, str) or not _SESSION_ID.match(session) or ".." in session:
        raise TandemError("invalid", f"not a session id: {session!r}")
    return targets_dir(home) / f"{session}.json"


def has_target(home: Path, session: str) -> bool:
    """Whether SESSION has a target file (damaged or not: reading it says which)."""
    return target_file(home, session).exists()
