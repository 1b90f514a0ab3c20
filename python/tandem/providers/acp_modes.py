"""Which ACP session mode a turn runs in, and which models an agent offers.

ACP agents may offer modes (``session/set_mode``); their ids are the agent's
own. tandem's permission mode must hold whatever the agent's default is, so a
read-only turn runs in a read-only mode when the agent offers one (Claude
Code's ``plan``, Codex's ``read-only``), and any other turn is moved out of a
mode known to approve on its own (Claude Code's ``auto``, ``acceptEdits``,
``bypassPermissions``) into the agent's asking ``default``. The permission
answers tandem gives stay the real enforcement; the mode keeps agents from
skipping the question.

Permission mode names map onto agent modes where they match
(`PERMISSION_MODE_NAMES`): ``ask`` and ``auto-edit`` → ``default``,
``read-only`` → ``plan``/``read-only``. ``auto-edit`` is not the agent's
``acceptEdits``: an agent in that mode writes files without asking, so a
write to a protected path (``.claude/settings.json``…, `tandem.tools.protected`)
would never reach tandem's question; in ``default`` the agent asks for each
edit and tandem answers an ordinary one itself. A mode the user chose for the
session (`tandem-acp-set-mode`) wins over the mapping unless it is one that
approves on its own, and never lifts a read-only turn out of its read-only mode.

Models come as the session's config option of category ``model`` (ACP's
stable ``configOptions``; the older unstable ``models`` field and
``session/set_model`` are not in the SDK's schema) and are set with
``session/set_config_option``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from acp.schema import SessionConfigOptionSelect, SessionConfigSelectGroup, SessionModeState

from tandem.providers.base import PermissionMode

READ_ONLY_MODES = ("read-only", "readonly", "plan")
"""Mode ids that forbid changes, in order of preference."""
AUTO_APPROVE_MODES = frozenset({"auto", "acceptEdits", "bypassPermissions", "full-access", "yolo"})
"""Mode ids in which an agent changes files or runs commands without asking."""
ASKING_MODE = "default"
PERMISSION_MODE_NAMES: dict[PermissionMode, tuple[str, ...]] = {
    "ask": (ASKING_MODE,),
    "auto-edit": (ASKING_MODE,),
    "read-only": READ_ONLY_MODES,
}
"""The agent modes each tandem permission mode maps onto, in order of preference."""


@dataclass
class SessionModes:
    """The modes one ACP session offers, the one it is in, the one it started in."""

    current: str
    available: list[str]
    original: str
    names: dict[str, str] = field(default_factory=dict)
    """Mode id → the agent's name for it."""

    @classmethod
    def of(cls, state: SessionModeState | None) -> SessionModes | None:
        """The modes of a session/new, load or resume answer (None: no modes)."""
        if state is None or not state.available_modes:
            return None
        ids = [m.id for m in state.available_modes]
        names = {m.id: m.name or m.id for m in state.available_modes}
        return cls(current=state.current_mode_id, available=ids, original=state.current_mode_id,
                   names=names)


@dataclass
class SessionModels:
    """The models one ACP session offers (its ``model`` config option)."""

    config_id: str
    current: str
    available: list[str]
    names: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, options: Sequence[Any] | None) -> SessionModels | None:
        """The model option of a session's config options (None: none offered)."""
        for option in options or []:
            if not isinstance(option, SessionConfigOptionSelect):
                continue
            if option.category != "model" and option.id != "model":
                continue
            values: dict[str, str] = {}
            for item in option.options:
                choices = item.options if isinstance(item, SessionConfigSelectGroup) else [item]
                for choice in choices:
                    values[choice.value] = choice.name or choice.value
            if values:
                return cls(config_id=option.id, current=str(option.current_value),
                           available=list(values), names=values)
        return None


def _allowed(mode: str, permission_mode: PermissionMode) -> bool:
    """Whether MODE keeps the questions PERMISSION_MODE asks (tandem answers the
    ordinary edits of ``auto-edit`` itself, so no mode may skip asking)."""
    return mode not in AUTO_APPROVE_MODES


def wanted_mode(
    modes: SessionModes,
    read_only: bool,
    permission_mode: PermissionMode = "ask",
    chosen: str | None = None,
) -> str:
    """The mode a turn should run in (possibly the current one); CHOSEN is the
    user's choice for the session, if any (see the module docstring)."""
    if read_only or permission_mode == "read-only":
        if chosen in READ_ONLY_MODES and chosen in modes.available:
            return chosen
        for mode in READ_ONLY_MODES:
            if mode in modes.available:
                return mode
    elif chosen is not None and chosen in modes.available and _allowed(chosen, permission_mode):
        return chosen
    if permission_mode == "auto-edit":
        for mode in PERMISSION_MODE_NAMES["auto-edit"]:
            if mode in modes.available:
                return mode
    if modes.original in AUTO_APPROVE_MODES and ASKING_MODE in modes.available:
        return ASKING_MODE
    return modes.original
