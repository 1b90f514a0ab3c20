"""Trusting a project's settings from Emacs: the grant, then no provider built without it.

Providers built under the old settings must not outlive a trust change, so
granting and revoking both drop the turn service's providers.
"""

from __future__ import annotations

import os
from pathlib import Path

from tandem.config.grants import grant_trust, revoke_trust, trust_report
from tandem.protocol.base import TandemError
from tandem.protocol.settings import TrustReport
from tandem.turns.service import TurnService


def existing_root(text: str) -> str:
    """TEXT as an existing absolute directory (``~`` expanded); a clear error otherwise."""
    path = os.path.expanduser(text)
    if not os.path.isabs(path) or not os.path.isdir(path):
        raise TandemError("invalid", f"cwd must be an existing absolute directory: {text!r}")
    return path


def report(home: Path, cwd: str) -> TrustReport:
    """Where CWD's project settings stand and what trust would grant."""
    return trust_report(existing_root(cwd), home)


def trust(turns: TurnService, home: Path, cwd: str, sha256: str) -> TrustReport:
    """Trust CWD's project settings at the content the user saw."""
    out = grant_trust(existing_root(cwd), home, sha256)
    turns.forget_providers()
    return out


def untrust(turns: TurnService, home: Path, cwd: str) -> bool:
    """Revoke the trust of CWD's project settings; whether there was one."""
    had = revoke_trust(existing_root(cwd), home)
    turns.forget_providers()
    return had
