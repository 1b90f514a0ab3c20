"""cwd-scoped settings: user settings merged with the project's own.

User: ``$XDG_CONFIG_HOME/tandem/settings.json`` (default ``~/.config``).
Project: ``<root>/.tandem/settings.json``; project keys win, objects merge
recursively. Adopting another project reloads the project layer; pending
changes are saved first, and a failed save stops the switch.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any, Literal

from tandem.protocol.base import TandemError
from tandem.store import fsutil

Scope = Literal["user", "project"]


def user_settings_path() -> Path:
    """``$XDG_CONFIG_HOME/tandem/settings.json``, ``~/.config`` when unset."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "tandem" / "settings.json"


def project_settings_path(root: str | Path) -> Path:
    """``<root>/.tandem/settings.json``."""
    return Path(root) / ".tandem" / "settings.json"


def load_object(path: Path) -> dict[str, Any]:
    """The JSON object in PATH ({} when the file is missing); bad content is an error."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise TandemError("invalid-settings", f"Cannot read settings {path}: {exc}") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise TandemError("invalid-settings", f"Settings {path}: invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TandemError("invalid-settings", f"Settings {path} must hold a JSON object")
    return data


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """BASE with OVER laid on top; nested objects merge, everything else replaces."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class Settings:
    """The settings that apply in one project directory, with pending changes."""

    def __init__(self, root: str | None, user_path: Path | None = None) -> None:
        self.user_path = user_path or user_settings_path()
        self.root: str | None = None
        self.user: dict[str, Any] = {}
        self.project: dict[str, Any] = {}
        self._dirty: set[Scope] = set()
        self.reload_for_cwd(root)

    @property
    def project_path(self) -> Path | None:
        """The project settings file of the current root (None without a root)."""
        return project_settings_path(self.root) if self.root else None

    @property
    def effective(self) -> dict[str, Any]:
        """User settings merged with project settings (project wins)."""
        return merge(self.user, self.project)

    def get(self, key: str, default: Any = None) -> Any:
        """The effective value of top-level KEY."""
        return self.effective.get(key, default)

    def set(self, key: str, value: Any, scope: Scope = "project") -> None:
        """Change KEY in SCOPE; saved by `flush` (or before the next switch)."""
        if not isinstance(key, str) or not key:
            raise TandemError("invalid", "a settings key must be a non-empty string")
        if scope not in ("user", "project"):
            raise TandemError("invalid", f"unknown settings scope {scope!r}")
        if scope == "project" and not self.root:
            raise TandemError("invalid", "no project is active to hold project settings")
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise TandemError("invalid", f"settings value for {key!r} is not JSON") from None
        (self.user if scope == "user" else self.project)[key] = value
        self._dirty.add(scope)

    @property
    def dirty(self) -> bool:
        """True while changes wait to be saved."""
        return bool(self._dirty)

    def flush(self) -> None:
        """Save pending changes (write-temp, fsync, rename); raise `TandemError` on failure."""
        for scope in sorted(self._dirty):
            path = self.user_path if scope == "user" else self.project_path
            data = self.user if scope == "user" else self.project
            if path is None:
                continue
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fsutil.atomic_write(path, (json.dumps(data, indent=2) + "\n").encode())
            except OSError as exc:
                raise TandemError(
                    "settings-save-failed", f"Could not save settings to {path}: {exc}"
                ) from None
            self._dirty.discard(scope)

    def reload_for_cwd(self, root: str | None) -> None:
        """Adopt ROOT's project settings and re-read the user settings.

        Pending changes are dropped; callers `flush` first.
        """
        user = load_object(self.user_path)
        project = load_object(project_settings_path(root)) if root else {}
        self.root, self.user, self.project = root, user, project
        self._dirty.clear()
