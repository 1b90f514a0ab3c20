"""Settings-trust methods for Emacs: ``settings/report``, ``settings/trust``, ``settings/untrust``.

Emacs shows the report (the file and the keys trust grants), asks, then
trusts with the digest it showed, so a file changed in between is refused.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field

from tandem.config.grants import TrustReport, grant_trust, revoke_trust, trust_report
from tandem.protocol.base import MethodSpec, Params, TandemError


class RootParams(Params):
    """The project root ``cwd``."""

    cwd: str


class TrustParams(Params):
    """Trust ``cwd``'s settings at content ``sha256`` (as shown by ``settings/report``)."""

    cwd: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


def _root(text: str) -> str:
    path = os.path.expanduser(text)
    if not os.path.isabs(path) or not os.path.isdir(path):
        raise TandemError("invalid", f"cwd must be an existing absolute directory: {text!r}")
    return path


def _settings_changed(app: Any) -> None:
    # Providers built under the old settings must not outlive a trust change.
    turns = app.services.get("turns")
    if turns is not None:
        turns.forget_providers()


async def report(app: Any, p: RootParams) -> TrustReport:
    """Where the project settings stand and what trust would grant."""
    return trust_report(_root(p.cwd), Path(app.home))


async def trust(app: Any, p: TrustParams) -> TrustReport:
    """Trust the project settings file at the content the user saw."""
    out = grant_trust(_root(p.cwd), Path(app.home), p.sha256)
    _settings_changed(app)
    return out


async def untrust(app: Any, p: RootParams) -> dict[str, bool]:
    """Revoke the trust of the project settings."""
    had = revoke_trust(_root(p.cwd), Path(app.home))
    _settings_changed(app)
    return {"revoked": had}


METHODS = [
    MethodSpec("settings/report", RootParams, report,
               "Whether the project settings are trusted, and what trust grants.", TrustReport),
    MethodSpec("settings/trust", TrustParams, trust,
               "Trust the project settings at the content shown.", TrustReport),
    MethodSpec("settings/untrust", RootParams, untrust, "Revoke trust in the project settings."),
]
