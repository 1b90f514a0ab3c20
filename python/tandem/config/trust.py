"""Which projects' settings the user trusts: ``TANDEM_HOME/trust.json``.

As direnv's ``allow``: trust is granted to one content of the files it
covers (`combined_digest` of each one's path and bytes), under the
canonical project root. A changed file is untrusted again until the user
trusts it anew. The store is written crash-safe
(temp file, fsync, rename) and kept private (0600).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tandem.protocol.base import TandemError
from tandem.store import fsutil

TRUST_FILE = "trust.json"


class Grant(BaseModel):
    """Trust of one project: the `combined_digest` of the files the user saw."""

    model_config = ConfigDict(extra="forbid")

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    granted_at: float = 0.0


class TrustFile(BaseModel):
    """The whole store."""

    model_config = ConfigDict(extra="forbid")

    version: int = 1
    projects: dict[str, Grant] = Field(default_factory=dict)


def canonical_root(root: str | Path) -> str:
    """ROOT with symbolic links and ``..`` resolved: the key of its grant."""
    return os.path.realpath(os.path.expanduser(os.fspath(root)))


def digest(data: bytes) -> str:
    """SHA-256 of a settings file's bytes, in hex."""
    return hashlib.sha256(data).hexdigest()


def combined_digest(files: Iterable[tuple[str, str]]) -> str:
    """The digest a grant is given for: over each present file's (relative path, `digest`).

    Sorted by path, so the order files are read in does not matter; a file
    that appears, disappears or moves changes it as a changed byte does.
    """
    entries = sorted(files)
    canon = json.dumps(entries, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(b"tandem-trust-2\n" + canon.encode()).hexdigest()


class TrustStore:
    """Grants under HOME (``TANDEM_HOME``)."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / TRUST_FILE

    def load(self) -> TrustFile:
        """The store's content (empty when missing); a damaged store trusts nothing, loudly."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return TrustFile()
        except OSError as exc:
            raise TandemError("invalid-settings", f"Cannot read {self.path}: {exc}") from None
        try:
            return TrustFile.model_validate_json(text)
        except ValidationError:
            raise TandemError(
                "invalid-settings",
                f"{self.path} is damaged; remove it and trust your projects again") from None

    def granted(self, root: str | Path) -> str | None:
        """The digest ROOT's settings were trusted at, or None."""
        grant = self.load().projects.get(canonical_root(root))
        return grant.sha256 if grant else None

    def is_trusted(self, root: str | Path, sha256: str) -> bool:
        """True when ROOT was trusted at exactly the content with SHA256."""
        return self.granted(root) == sha256

    def grant(self, root: str | Path, sha256: str) -> None:
        """Trust ROOT's files at their combined digest SHA256."""
        data = self.load()
        data.projects[canonical_root(root)] = Grant(sha256=sha256, granted_at=time.time())
        self._save(data)

    def revoke(self, root: str | Path) -> bool:
        """Forget ROOT's grant; True when there was one."""
        data = self.load()
        if data.projects.pop(canonical_root(root), None) is None:
            return False
        self._save(data)
        return True

    def _save(self, data: TrustFile) -> None:
        try:
            fsutil.private_dir(self.path.parent)
            fsutil.atomic_write(self.path, (json.dumps(data.model_dump(), indent=2) + "\n")
                                .encode())
        except OSError as exc:
            raise TandemError("settings-save-failed",
                              f"Could not save {self.path}: {exc}") from None
