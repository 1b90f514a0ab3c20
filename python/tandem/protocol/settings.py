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


class SaveUserParams(Params):
    """Keys to change in the user's settings file: a partial settings object as JSON.

    Objects merge key by key into what the file holds; ``null`` removes a key.
    """

    settings_json: str = Field(min_length=2, max_length=1 << 20)


class UserSettingsSaved(Reply):
    """Where the user's settings were saved, and which keys changed."""

    path: str
    keys: list[str]
