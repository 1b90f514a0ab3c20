"""The files a trust grant covers, each read once: what is shown is what is hashed.

A grant is given for the `combined_digest` of every covered file's relative
path and bytes. `covered_files` names them (the project's
``.tandem/settings.json`` and the files its ACP agents read as their own
configuration, `tandem.config.agent_files`); `read_shown` reads one of them
in a single open, so its text, its digest and whatever is parsed from it come
from the same bytes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tandem.config.agent_files import listed_files
from tandem.config.trust import combined_digest, digest
from tandem.protocol.settings import SHOWN_BYTES

__all__ = ["SHOWN_BYTES", "PROJECT_SETTINGS", "Shown", "covered_files", "project_digest",
           "read_bytes", "read_shown"]

PROJECT_SETTINGS = ".tandem/settings.json"
"""The project settings file, relative to the root."""

_CHUNK = 64 * 1024


def read_bytes(path: Path, limit: int) -> tuple[bytes, os.stat_result] | None:
    """PATH's bytes from one open, and the status of that very open; None when missing.

    At most LIMIT + 1 bytes are read, so a caller can tell a file past LIMIT
    without holding it whole. Anything but a regular file is an `OSError`
    (``O_NONBLOCK``: a FIFO put in its place cannot make the read wait).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        parts: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, _CHUNK))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts), st
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Shown:
    """One covered file as read for a report: its bytes, or why it cannot be shown whole."""

    rel: str
    path: Path
    data: bytes | None
    """The bytes read (None: no such file, or unreadable); at most `SHOWN_BYTES` + 1."""
    size: int = 0
    text: str = ""
    """The whole file as text; empty when it cannot be shown (see `error`)."""
    error: str | None = None

    @property
    def sha256(self) -> str | None:
        """The digest of the bytes read (None when missing)."""
        return None if self.data is None else digest(self.data)

    @property
    def counted(self) -> str | None:
        """What the combined digest counts for this file: its digest, a mark, or nothing.

        A file that is there but cannot be read still counts (as a mark), so
        its appearing changes the digest; a missing file does not count.
        """
        return self.sha256 or ("unreadable" if self.error else None)


def read_shown(root: str | Path, rel: str, limit: int = SHOWN_BYTES) -> Shown:
    """ROOT/REL read once: shown whole, or with a sentence saying why it cannot be."""
    path = Path(root) / rel
    try:
        got = read_bytes(path, limit)
    except OSError as exc:
        return Shown(rel, path, None, error=f"Cannot read {path}: {exc.strerror or exc}")
    if got is None:
        return Shown(rel, path, None)
    data, st = got
    size = max(st.st_size, len(data))
    if len(data) > limit:
        return Shown(rel, path, data, size, error=(
            f"{path} is too large to show whole ({size} bytes; a trust report shows up "
            f"to {limit}), so it cannot be trusted; shorten it"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Shown(rel, path, data, size, error=f"{path} is not UTF-8 text, so it cannot "
                     "be shown or trusted")
    return Shown(rel, path, data, size, text)


def covered_files(root: str | Path, user: Mapping[str, object]) -> list[str]:
    """The files under ROOT a grant covers, relative to it.

    The settings file, then every agent file (those tandem knows for the
    agents it can start, and those the ``project_config_files`` of USER's
    ``acp_agents`` entries name: USER is the user's own settings, trusted).
    Listed whether or not they exist: a file that appears changes the digest.
    """
    del root  # the same list for every project: what may appear there counts
    agents = user.get("acp_agents")
    listed = listed_files(agents if isinstance(agents, dict) else None)
    return [PROJECT_SETTINGS, *(rel for rel in listed if rel != PROJECT_SETTINGS)]


def project_digest(root: str | Path, settings_sha: str | None,
                   user: Mapping[str, object]) -> str | None:
    """The digest ROOT would be trusted at now, the settings file's own already known.

    SETTINGS_SHA is the digest of the settings bytes the caller parsed (so
    the content applied is the content compared); any other covered file is
    read here. None when no covered file exists.
    """
    entries: list[tuple[str, str]] = []
    for rel in covered_files(root, user):
        if rel == PROJECT_SETTINGS:
            sha = settings_sha
        else:
            sha = read_shown(root, rel).counted
        if sha is not None:
            entries.append((rel, sha))
    return combined_digest(entries) if entries else None
