"""Settings-trust methods (``settings/…``): report, trust, untrust a project's settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.protocol.base import MethodSpec
from tandem.protocol.settings import RootParams, TrustParams, TrustReport
from tandem.turns import trust as trusting

if TYPE_CHECKING:
    from tandem.app import App


async def report(app: App, p: RootParams) -> TrustReport:
    """Where the project settings stand and what trust would grant."""
    return trusting.report(app.home, p.cwd)


async def trust(app: App, p: TrustParams) -> TrustReport:
    """Trust the project settings file at the content the user saw."""
    return trusting.trust(app.turns, app.home, p.cwd, p.sha256)


async def untrust(app: App, p: RootParams) -> dict[str, bool]:
    """Revoke the trust of the project settings."""
    return {"revoked": trusting.untrust(app.turns, app.home, p.cwd)}


METHODS = [
    MethodSpec("settings/report", RootParams, report,
               "Whether the project settings are trusted, and what trust grants.", TrustReport),
    MethodSpec("settings/trust", TrustParams, trust,
               "Trust the project settings at the content shown.", TrustReport),
    MethodSpec("settings/untrust", RootParams, untrust, "Revoke trust in the project settings."),
]
