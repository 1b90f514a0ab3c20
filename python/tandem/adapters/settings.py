"""Settings-trust methods (``settings/…``): report, trust, untrust a project's settings."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tandem.config.user_file import changed_keys, save_user_settings
from tandem.protocol.base import MethodSpec, TandemError
from tandem.protocol.settings import (
    Revoked,
    RootParams,
    SaveUserParams,
    TrustParams,
    TrustReport,
    UserSettingsSaved,
)
from tandem.turns import trust as trusting

if TYPE_CHECKING:
    from tandem.app import App


async def report(app: App, p: RootParams) -> TrustReport:
    """Where the project settings stand and what trust would grant."""
    return trusting.report(app.home, p.cwd)


async def trust(app: App, p: TrustParams) -> TrustReport:
    """Trust the project settings file at the content the user saw."""
    return trusting.trust(app.turns, app.home, p.cwd, p.sha256)


async def untrust(app: App, p: RootParams) -> Revoked:
    """Revoke the trust of the project settings."""
    return Revoked(revoked=trusting.untrust(app.turns, app.home, p.cwd))


async def save_user(app: App, p: SaveUserParams) -> UserSettingsSaved:
    """Change keys of the user's own settings file (what the CLI reads too)."""
    try:
        changes = json.loads(p.settings_json)
    except ValueError as exc:
        raise TandemError("invalid-settings", f"Settings to save: invalid JSON: {exc}") from None
    if not isinstance(changes, dict):
        raise TandemError("invalid-settings", "Settings to save must be a JSON object")
    path = save_user_settings(changes)
    return UserSettingsSaved(path=str(path), keys=changed_keys(changes))


METHODS = [
    MethodSpec("settings/report", RootParams, report,
               "Whether the project settings are trusted, and what trust grants.", TrustReport),
    MethodSpec("settings/trust", TrustParams, trust,
               "Trust the project settings at the content shown.", TrustReport),
    MethodSpec("settings/untrust", RootParams, untrust, "Revoke trust in the project settings."),
    MethodSpec("settings/save-user", SaveUserParams, save_user,
               "Change keys of the user's settings file, which `tandem ask` reads too.",
               UserSettingsSaved),
]
