"""The dotted names of every settings key (``native.max_steps``), for front ends.

Emacs maps each to a ``defcustom``; its test asks the backend for this list
so that a key added to the model without one fails there.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tandem.config.model import Section, SettingsModel


def _section(annotation: Any) -> type[BaseModel] | None:
    for arg in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(arg, type) and issubclass(arg, Section):
            return arg
    return None


def setting_keys(model: type[BaseModel] = SettingsModel, prefix: str = "") -> list[str]:
    """Every leaf key of MODEL; a map of named entries (``acp_agents``) counts as one key."""
    out: list[str] = []
    for name, info in model.model_fields.items():
        section = _section(info.annotation)
        if section is not None:
            out += setting_keys(section, f"{prefix}{name}.")
        else:
            out.append(prefix + name)
    return out
