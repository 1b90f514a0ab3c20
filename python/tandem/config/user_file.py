"""Writing the user's own settings file: the one place a choice made in Emacs is kept.

The first-run setup and ``M-x tandem-save-setting`` change keys of
``$XDG_CONFIG_HOME/tandem/settings.json`` through here, so ``tandem ask``,
``tandem doctor`` and every later Emacs read the same configuration. A change
is merged key by key into what the file holds (a ``null`` removes a key), the
result is validated against the settings model before anything is written,
and the file is replaced crash-safe and private (0600 in a 0700 folder).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path

from tandem.config.layers import read_layer, user_settings_path
from tandem.config.model import MAX_FILE_BYTES, validate
from tandem.protocol.base import TandemError
from tandem.store.fsutil import atomic_write, private_dir


def _apply(base: Mapping[str, object], changes: Mapping[str, object]) -> dict[str, object]:
    """BASE with CHANGES laid on: nested objects merge, ``None`` removes, the rest replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in changes.items():
        below = out.get(key)
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(below, dict):
            merged = out[key] = _apply(below, value)
            if not merged:
                out.pop(key)
        else:
            out[key] = copy.deepcopy(value)
    return out


def changed_keys(changes: Mapping[str, object], prefix: str = "") -> list[str]:
    """The dotted keys CHANGES sets or removes (for the message that says what was saved)."""
    out: list[str] = []
    for key, value in changes.items():
        if isinstance(value, dict) and value:
            out.extend(changed_keys(value, f"{prefix}{key}."))
        else:
            out.append(prefix + key)
    return out


def save_user_settings(changes: Mapping[str, object], path: Path | None = None) -> Path:
    """Merge CHANGES into the user's settings file and write it; return its path.

    Refused with ``invalid-settings`` (and nothing written) when the file as
    it stands does not parse — the user's hand-written content is never
    replaced by a guess — or when the result would not validate.
    """
    target = path or user_settings_path()
    layer = read_layer(target)  # raises when the current file is not JSON
    if layer.error is not None:
        raise TandemError("invalid-settings", f"{layer.error.message} — fix {target} first; "
                          "nothing was saved")
    merged = _apply(layer.raw, changes)
    validate(merged, str(target))
    data = (json.dumps(merged, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    if len(data) > MAX_FILE_BYTES:
        raise TandemError("invalid-settings", f"Settings {target}: the result would be larger "
                          f"than {MAX_FILE_BYTES} bytes; nothing was saved")
    private_dir(target.parent)
    atomic_write(target, data)
    return target
