"""Settings layers: read each file once per change, filter the project by trust, merge.

Layers, lowest first: the user's file (trusted), the project's file
(untrusted data unless the user trusted that exact content), then what
the front end pushes (trusted, laid on by the caller). An untrusted project
keeps only harmless keys; what it tried to set beyond that is reported as
``ignored`` and in ``warnings``, naming the file and the keys.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tandem.config import strict_json
from tandem.config.model import (
    DEFAULT_PROTECTED_PATHS,
    MAX_FILE_BYTES,
    MODE_ORDER,
    NativeSettings,
    SettingsModel,
    family_sections,
    trusted_only_keys,
    validate,
)
from tandem.config.shown import project_digest, read_bytes
from tandem.config.trust import TrustStore, canonical_root, digest
from tandem.lru import LRU
from tandem.protocol.base import TandemError


def user_settings_path() -> Path:
    """``$XDG_CONFIG_HOME/tandem/settings.json``, ``~/.config`` when unset."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "tandem" / "settings.json"


def project_settings_path(root: str | Path) -> Path:
    """``<root>/.tandem/settings.json``."""
    return Path(root) / ".tandem" / "settings.json"


def merge(base: Mapping[str, object], over: Mapping[str, object]) -> dict[str, object]:
    """BASE with OVER laid on top; nested objects merge, everything else replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        below = out.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            out[key] = merge(below, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@dataclass(frozen=True)
class FileLayer:
    """One settings file as read: its JSON object, digest and typed form."""

    path: Path
    raw: dict[str, object]
    sha256: str | None
    """SHA-256 of the bytes parsed (None when the file is missing)."""
    model: SettingsModel | None
    error: TandemError | None = None
    """Why the typed model could not be built (the raw object is still usable)."""

    @property
    def exists(self) -> bool:
        """True when the file is there."""
        return self.sha256 is not None

    def typed(self) -> SettingsModel:
        """The typed settings; the validation error when there are none."""
        if self.error is not None:
            raise self.error
        return self.model or SettingsModel()


CACHE_LIMIT = 256
"""Settings files kept parsed (least recently read go first)."""
_cache: LRU[str, tuple[tuple[int, ...], FileLayer | TandemError]] = LRU(CACHE_LIMIT)


def _stamp(st: os.stat_result) -> tuple[int, ...]:
    # ctime too: a rewrite that puts mtime and size back still moves it.
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)


def read_layer(path: Path) -> FileLayer:
    """The settings file PATH, parsed and validated once per change.

    Cached by path, mtime, ctime, size, inode and device (a refusal too); a
    missing file is an empty layer. Unreadable or unparseable content raises
    ``invalid-settings``. The digest is always of the very bytes parsed.
    """
    key = str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        _cache.pop(key, None)
        return FileLayer(path, {}, None, SettingsModel())
    except OSError as exc:
        raise TandemError("invalid-settings", f"Cannot read settings {path}: {exc}") from None
    hit = _cache.get(key)
    if hit is not None and hit[0] == _stamp(st):
        if isinstance(hit[1], TandemError):
            raise hit[1].with_traceback(None)
        return hit[1]
    try:
        got = read_bytes(path, MAX_FILE_BYTES)
    except OSError as exc:
        raise TandemError("invalid-settings", f"Cannot read settings {path}: {exc}") from None
    if got is None:
        _cache.pop(key, None)
        return FileLayer(path, {}, None, SettingsModel())
    data, opened = got
    try:
        layer: FileLayer | TandemError = parse_layer(path, data)
    except TandemError as exc:
        layer = exc
    _cache[key] = (_stamp(opened), layer)  # the status of the open that read these bytes
    if isinstance(layer, TandemError):
        raise layer
    return layer


def parse_layer(path: Path, data: bytes) -> FileLayer:
    """DATA, the bytes of settings file PATH, parsed and validated (no file access).

    Too large, not UTF-8, not strict JSON, a key twice, not an object:
    ``invalid-settings``. Content that parses but does not validate is a
    layer with its `error` (the raw object is still usable).
    """
    if len(data) > MAX_FILE_BYTES:
        raise TandemError("invalid-settings", f"Settings {path}: more than the "
                          f"{MAX_FILE_BYTES} bytes a settings file may hold")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TandemError("invalid-settings", f"Settings {path}: invalid JSON: {exc}") from None
    obj = strict_json.loads(text, str(path)) if text.strip() else {}
    if not isinstance(obj, dict):
        raise TandemError("invalid-settings", f"Settings {path} must hold a JSON object")
    try:
        return FileLayer(path, obj, digest(data), validate(obj, str(path)))
    except TandemError as exc:
        return FileLayer(path, obj, digest(data), None, exc)


def load_object(path: Path) -> dict[str, object]:
    """The JSON object in PATH ({} when the file is missing); bad content is an error."""
    return copy.deepcopy(read_layer(path).raw)


# -- trust filtering -----------------------------------------------------------------


def _present(data: Mapping[str, object], dotted: str) -> bool:
    head, _, rest = dotted.partition(".")
    if head not in data:
        return False
    if not rest:
        return True
    inner = data[head]
    return isinstance(inner, dict) and _present(inner, rest)


def _drop(data: dict[str, object], dotted: str) -> None:
    head, _, rest = dotted.partition(".")
    if not rest:
        data.pop(head, None)
        return
    inner = data.get(head)
    if isinstance(inner, dict):
        _drop(inner, rest)
        if not inner:
            data.pop(head)


def _users_native(provider: object, user: Mapping[str, object]) -> bool:
    """Whether PROVIDER is a native family's (``openai:…``) and USER's settings name the family."""
    family = str(provider).partition(":")[0]
    own = str(user.get("default_provider") or "").partition(":")[0]
    return family in family_sections() and (family == own or family in user)


def untrusted_view(project: Mapping[str, object], user: Mapping[str, object]
                   ) -> tuple[dict[str, object], list[str]]:
    """What an untrusted PROJECT object may set over USER's, and the keys it may not.

    Never: a trusted-only key (URLs, agent and server commands). Only when
    not looser than the user's: ``permission_mode``. Only when not above the
    user's value (or the built-in default): the ``native`` limits. Only a
    native provider of a family the user's own configuration names (its
    ``default_provider`` or its section): ``default_provider``.
    """
    kept = copy.deepcopy(dict(project))
    ignored: list[str] = []
    if kept.pop(PROJECT_NEVER, None) is not None:
        ignored.append(f"{PROJECT_NEVER} (kept only in your own settings)")
    for dotted in sorted(trusted_only_keys()):
        if _present(kept, dotted):
            ignored.append(dotted)
            _drop(kept, dotted)
    provider = kept.get("default_provider")
    if provider is not None and not _users_native(provider, user):
        ignored.append(f"default_provider ({provider} is not a native provider you configured)")
        kept.pop("default_provider")
    mode = kept.get("permission_mode")
    mine = str(user.get("permission_mode") or "ask")  # the user's file validated: a mode
    if isinstance(mode, str) and MODE_ORDER.get(mode, 0) > MODE_ORDER.get(mine, 1):
        ignored.append(f"permission_mode ({mode} is looser than your {mine})")
        kept.pop("permission_mode")
    native = kept.get("native")
    users = user.get("native")
    base = users if isinstance(users, dict) else {}
    if isinstance(native, dict):
        defaults = NativeSettings().model_dump()
        for name, value in list(native.items()):
            ceiling = base.get(name, defaults.get(name))
            if isinstance(value, int | float) and isinstance(ceiling, int | float) and (
                    value > ceiling):
                ignored.append(f"native.{name} (above your {ceiling})")
                del native[name]
        if not native:
            kept.pop("native")
    _protected_union(kept, user, ignored)
    return kept, ignored


PROJECT_NEVER = "permission_rules"
"""The key a project file never sets, even trusted: what runs without asking is the
user's word alone (docs/security.md)."""


LIMITED_KEYS = ("permission_mode", "native", "protected_paths")
"""Keys an untrusted project may set only tighter than the user's."""


def restricted_values(data: Mapping[str, object]) -> list[tuple[str, object]]:
    """Every key of DATA that is trusted-only or only allowed tighter, with its value.

    What the trust report lists, so that what would run or where a key would
    go is read from the parsed file, not from its text. ``native`` is listed
    key by key.
    """
    out: list[tuple[str, object]] = []
    for dotted in sorted(trusted_only_keys() | set(LIMITED_KEYS)):
        if not _present(data, dotted):
            continue
        value = _value(data, dotted)
        if dotted == "native" and isinstance(value, dict):
            out += [(f"native.{name}", v) for name, v in sorted(value.items())]
        else:
            out.append((dotted, value))
    return out


def _value(data: Mapping[str, object], dotted: str) -> object:
    value: object = data
    for part in dotted.split("."):
        if not isinstance(value, Mapping):  # asked only where `_present` found it
            raise KeyError(part)
        value = value[part]
    return value


def _protected_union(kept: dict[str, object], user: Mapping[str, object],
                     ignored: list[str]) -> None:
    """An untrusted project's ``protected_paths`` add to the user's list, never shorten it."""
    wanted = kept.get("protected_paths")
    if not isinstance(wanted, list):
        return
    base = user.get("protected_paths")
    base = list(base) if isinstance(base, list) else list(DEFAULT_PROTECTED_PATHS)
    folded = {str(p).casefold() for p in wanted}
    missing = [p for p in base if str(p).casefold() not in folded]
    if missing:
        ignored.append(f"protected_paths (a project may add to the list, not remove "
                       f"{', '.join(missing)})")
    kept["protected_paths"] = add_protected(base, wanted)


def add_protected(base: list[Any], more: list[Any]) -> list[Any]:
    """BASE with the entries of MORE it lacks (compared case-insensitively) appended."""
    have = {str(p).casefold() for p in base}
    return [*base, *(p for p in more if str(p).casefold() not in have)]


# -- resolution ----------------------------------------------------------------------


@dataclass
class Resolved:
    """The settings that apply in one project, and what was left out."""

    settings: SettingsModel
    user: FileLayer
    project: FileLayer | None
    trusted: bool
    """The user trusts the project as it is: its settings and its agents' files."""
    ignored: list[str] = field(default_factory=list)
    changed: bool = False
    """The project was trusted at another content: its file changed since."""

    def plain(self) -> dict[str, object]:
        """The effective settings as plain JSON data."""
        return self.settings.plain()

    @property
    def warnings(self) -> list[str]:
        """One sentence per file with ignored keys, naming the file and keys."""
        if not self.ignored or self.project is None:
            return []
        root = self.project.path.parent.parent
        if self.trusted:  # only what no project sets, trusted or not
            return [f"{self.project.path}: ignored {', '.join(self.ignored)} (a project "
                    "never sets them, trusted or not)"]
        why = ("changed since you trusted it" if self.changed else "this project is not trusted")
        return [f"{self.project.path}: ignored {', '.join(self.ignored)} ({why}; "
                f"trusting the project allows them: `tandem trust {root}`)"]

    def origin(self, dotted: str) -> str:
        """The file the effective value of DOTTED came from (for error messages)."""
        if self.project is not None and _present(self.project_kept, dotted):
            return f"{dotted} in {self.project.path}"
        if _present(self.user.raw, dotted):
            return f"{dotted} in {self.user.path}"
        return dotted

    project_kept: dict[str, object] = field(default_factory=dict)
    """The project keys that took effect."""


def resolve(root: str | Path | None, home: Path, user_path: Path | None = None,
            overlay: Mapping[str, object] | None = None) -> Resolved:
    """User and ROOT's project settings, the project filtered by trust, OVERLAY on top.

    OVERLAY is the front end's configuration (trusted). Raises
    ``invalid-settings`` when a file (or the merged result) does not validate.
    """
    user = read_layer(user_path or user_settings_path())
    user.typed()
    project = read_layer(project_settings_path(root)) if root else None
    kept: dict[str, object] = {}
    ignored: list[str] = []
    trusted = changed = False
    if project is not None and project.exists:
        project.typed()
    if root:
        # Agent files alone can be trusted too: the grant is checked whenever
        # there is a project, against everything it covers as it is now.
        canon = canonical_root(root)
        covered = project_digest(canon, project.sha256 if project is not None else None,
                                 user.raw)
        granted = TrustStore(home).granted(canon) if covered is not None else None
        trusted = granted is not None and granted == covered
        changed = granted is not None and not trusted
    if project is not None and project.exists:
        if trusted:
            kept = copy.deepcopy(project.raw)
            if kept.pop(PROJECT_NEVER, None) is not None:
                ignored.append(f"{PROJECT_NEVER} (kept only in your own settings)")
        else:
            # The front end's layer is the user's own word too (Emacs' `tandem-provider`).
            kept, ignored = untrusted_view(project.raw, merge(user.raw, overlay or {}))
    merged = merge(merge(user.raw, kept), overlay or {})
    added = project.raw.get("protected_paths") if project is not None and not trusted else None
    if isinstance(added, list):
        # The front end's list replaces the user file's; the project's additions stay.
        current = merged["protected_paths"]  # set by the project's kept list at least
        if isinstance(current, list):
            merged["protected_paths"] = add_protected(current, added)
    settings = validate(merged, "(merged)")
    return Resolved(settings, user, project, trusted, ignored, changed, project_kept=kept)
