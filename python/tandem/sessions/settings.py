"""cwd-scoped settings: user settings merged with the project's own, with pending changes.

User: ``$XDG_CONFIG_HOME/tandem/settings.json`` (default ``~/.config``).
Project: ``<root>/.tandem/settings.json``; objects merge recursively and
project keys win, except those an untrusted project may not set (see
`tandem.config.layers`): `effective` is what applies, `warnings` says what
was ignored. Adopting another project reloads the project layer; pending
changes are saved first, and a failed save stops the switch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from tandem.config.layers import (
    load_object,
    merge,
    project_settings_path,
    read_layer,
    resolve,
    untrusted_view,
    user_settings_path,
)
from tandem.config.shown import project_digest
from tandem.config.trust import TrustStore, canonical_root
from tandem.paths import tandem_home
from tandem.protocol.base import TandemError
from tandem.store import fsutil

Scope = Literal["user", "project"]

__all__ = ["Settings", "load_object", "merge", "project_settings_path", "user_settings_path"]


class Settings:
    """The settings that apply in one project directory, with pending changes."""

    def __init__(self, root: str | None, user_path: Path | None = None,
                 home: Path | None = None) -> None:
        self.user_path = user_path or user_settings_path()
        self.home = home or tandem_home()
        self.root: str | None = None
        self.user: dict[str, object] = {}
        self.project: dict[str, object] = {}
        self._dirty: set[Scope] = set()
        self.reload_for_cwd(root)

    @property
    def project_path(self) -> Path | None:
        """The project settings file of the current root (None without a root)."""
        return project_settings_path(self.root) if self.root else None

    @property
    def effective(self) -> dict[str, object]:
        """User settings merged with the project settings that apply (project wins)."""
        return merge(self.user, self._project_view()[0])

    def _project_view(self) -> tuple[dict[str, object], list[str]]:
        if not self.root or not self.project:
            return self.project, []
        try:  # trusted only while the memory copy is the very file the user trusted
            layer = read_layer(project_settings_path(self.root))
            canon = canonical_root(self.root)
            if layer.exists and layer.raw == self.project and TrustStore(self.home).is_trusted(
                    canon, project_digest(canon, layer.sha256, self.user) or ""):
                return self.project, []
        except TandemError:
            pass
        return untrusted_view(self.project, self.user)

    @property
    def warnings(self) -> list[str]:
        """What the files say that does not apply, one sentence per file (never raises)."""
        try:
            return resolve(self.root, self.home, self.user_path).warnings
        except TandemError as exc:
            return [exc.message]

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
                if scope == "user":
                    fsutil.private_dir(path.parent)
                else:  # the project's own folder: the user's modes, not tandem's
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
