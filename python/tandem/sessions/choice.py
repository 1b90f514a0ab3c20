"""A session's settings and the choices made from them: provider and permission mode.

The settings of a session are those of its root: the user's file, the
project's (filtered by trust), and the front end's layer on top
(`tandem.config.front_end`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tandem.config.front_end import FrontEndSettings
from tandem.config.layers import Resolved, resolve
from tandem.paths import tandem_home
from tandem.protocol.base import TandemError
from tandem.providers import families
from tandem.providers.base import PermissionMode
from tandem.providers.registry import parse_provider

PERMISSION_MODES: tuple[PermissionMode, ...] = ("ask", "auto-edit", "read-only")


def resolve_for(root: Path, front_end: FrontEndSettings | None = None,
                home: Path | None = None) -> Resolved:
    """ROOT's settings: user, project (filtered by trust in HOME), the front end's on top."""
    overlay = front_end.layer() if front_end is not None else {}
    return resolve(root, home or tandem_home(), overlay=overlay)


def settings_for(root: Path, front_end: FrontEndSettings | None = None,
                 home: Path | None = None) -> dict[str, object]:
    """The effective settings of ROOT as plain data (see `resolve_for`)."""
    return resolve_for(root, front_end, home).plain()


def choose_provider(settings: Mapping[str, object], requested: str | None) -> str:
    """The provider name a request uses: REQUESTED, else the settings' default."""
    name = requested or settings.get("default_provider")
    if not name:
        raise TandemError("no-provider", "No provider chosen: pass one (e.g. "
                          f"{families.provider_examples()}, acp:claude) or set default_provider "
                          "in ~/.config/tandem/settings.json")
    parse_provider(str(name))  # a clear error for a malformed name
    return str(name)


def choose_permission_mode(settings: Mapping[str, object], requested: str | None,
                           front_end: FrontEndSettings | None = None) -> PermissionMode:
    """The permission mode: the request's, else the front end's, else settings, else ask."""
    mode = requested or (front_end.permission_mode if front_end else None) or settings.get(
        "permission_mode") or "ask"
    if mode not in PERMISSION_MODES:
        raise TandemError("invalid", f"permission mode {mode!r}: use ask, auto-edit or read-only")
    return mode
