"""Per-session remote targets on disk: ``$TANDEM_HOME/remote/targets/<session>.json``.

One small JSON file per session, replaced atomically (write-temp, fsync,
rename). A target records host name, URL and working dir, never a key.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from tandem.protocol.base import TandemError
from tandem.protocol.remote import RemoteTarget
from tandem.remote.target_file import target_file as _file
from tandem.store import fsutil


def save_target(home: Path, target: RemoteTarget) -> Path:
    """Write TARGET for its session, replacing any earlier one; return the file."""
    path = _file(home, target.session)
    fsutil.private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(target.model_dump_json() + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)
    return path


def load_target(home: Path, session: str) -> RemoteTarget | None:
    """The target of SESSION, or None when it has none; a damaged file is an error."""
    path = _file(home, session)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return RemoteTarget.model_validate_json(text)
    except ValidationError as e:
        raise TandemError(
            "corrupt", f"the remote target file {path} is damaged; remove it to detach ({e})"
        ) from e


def remove_target(home: Path, session: str) -> bool:
    """Detach SESSION from its remote target; True if it had one."""
    path = _file(home, session)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
