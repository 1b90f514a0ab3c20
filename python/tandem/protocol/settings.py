"""Params and replies of the settings-trust methods (``settings/…``).

Emacs shows the report (every file trust covers, whole, and the parsed value
of every restricted key), asks, then trusts with the digest it showed, so a
file changed in between is refused.
"""

from __future__ import annotations

from pydantic import Field

from tandem.protocol.base import Params, Reply

SHOWN_BYTES = 256 * 1024
"""The largest file a report shows (whole); a larger one cannot be trusted.

A real settings file is a few KiB; at 256 KiB a report of several files stays
well inside one frame and Emacs inserts it at once."""


class RootParams(Params):
    """The project root ``cwd``."""

    cwd: str


class TrustParams(Params):
    """Trust ``cwd``'s settings at digest ``sha256`` (as shown by ``settings/report``)."""

    cwd: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class ShownFile(Reply):
    """One file a grant covers, as read once for the report."""

    rel: str
    """Its path under the project root (``.tandem/settings.json``, ``.claude/settings.json``)."""
    path: str
    exists: bool
    size: int = 0
    sha256: str | None = None
    """SHA-256 of the bytes shown."""
    text: str = ""
    """The whole file; empty when it cannot be shown whole (`error` says why)."""
    error: str | None = None


class RestrictedValue(Reply):
    """A key an untrusted project may not set (or only tighter), with its parsed value."""

    key: str
    """Dotted (``acp_agents``, ``native.max_steps``)."""
    file: str
    """The `ShownFile.rel` it is set in."""
    value: str
    """The value as the parser read it: JSON text, every non-ASCII character escaped."""
    needs_trust: bool
    """Ignored while the project is untrusted; trust would let it apply."""


class TrustReport(Reply):
    """Where ROOT's project settings stand, from one read of each file."""

    root: str
    path: str
    """The project settings file."""
    exists: bool
    trusted: bool = False
    changed: bool = False
    """Trusted once, at another content."""
    sha256: str | None = None
    """The digest a grant is given for: over every shown file's path and bytes."""
    grants: list[str] = []
    """The keys that apply only with trust (ignored while untrusted)."""
    restricted: list[RestrictedValue] = []
    """Every restricted key the files set, with its value."""
    files: list[ShownFile] = []
    """The files the grant covers, each shown whole: the settings file, present or not,
    and each agent configuration file that is there."""
    error: str | None = None
    """Why trust is refused (invalid settings, a file too large to show)."""


class SaveUserParams(Params):
    """Keys to change in the user's settings file: a partial settings object as JSON.

    Objects merge key by key into what the file holds; ``null`` removes a key.
    """

    settings_json: str = Field(min_length=2, max_length=1 << 20)


class UserSettingsSaved(Reply):
    """Where the user's settings were saved, and which keys changed."""

    path: str
    keys: list[str]


class Revoked(Reply):
    """``settings/untrust``: whether a trust was there to revoke."""

    revoked: bool
