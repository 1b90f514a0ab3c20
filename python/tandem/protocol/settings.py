"""Params and replies of the settings-trust methods (``settings/…``).

Emacs shows the report (the file and the keys trust grants), asks, then
trusts with the digest it showed, so a file changed in between is refused.
"""

from __future__ import annotations

from pydantic import Field

from tandem.protocol.base import Params, Reply

SHOWN_CHARS = 64 * 1024
"""How much of the file a report carries for the user to read before trusting."""


class RootParams(Params):
    """The project root ``cwd``."""

    cwd: str


class TrustParams(Params):
    """Trust ``cwd``'s settings at content ``sha256`` (as shown by ``settings/report``)."""

    cwd: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class ShownFile(Reply):
    """One more project file a grant covers (an agent's configuration), as read."""

    path: str
    sha256: str
    """Its digest, or why it cannot be trusted (unreadable, too large, not a file)."""
    text: str = ""


class TrustReport(Reply):
    """Where ROOT's project settings stand."""

    root: str
    path: str
    exists: bool
    trusted: bool = False
    changed: bool = False
    """Trusted once, at another content."""
    sha256: str | None = None
    grants: list[str] = []
    """The keys that apply only with trust (ignored while untrusted)."""
    text: str = ""
    """The file's content (first `SHOWN_CHARS` characters)."""
    error: str | None = None
    """Why the file cannot be used at all (invalid settings)."""
    agent_files: list[ShownFile] = []
    """The project's agent configuration files; `sha256` covers them with the settings."""
