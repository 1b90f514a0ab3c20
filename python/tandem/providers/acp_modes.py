"""Which ACP session mode a turn runs in.

ACP agents may offer modes (``session/set_mode``); their ids are the agent's
own. tandem's permission mode must hold whatever the agent's default is, so a
read-only turn runs in a read-only mode when the agent offers one (Claude
Code's ``plan``, Codex's ``read-only``), and any other turn is moved out of a
mode known to approve on its own (Claude Code's ``auto``, ``acceptEdits``,
``bypassPermissions``) into the agent's asking ``default``. The permission
answers tandem gives stay the real enforcement; the mode keeps agents from
skipping the question.
"""

from __future__ import annotations

from dataclasses import dataclass

from acp.schema import SessionModeState

READ_ONLY_MODES = ("read-only", "readonly", "plan")
"""Mode ids that forbid changes, in order of preference."""
AUTO_APPROVE_MODES = frozenset({"auto", "acceptEdits", "bypassPermissions", "full-access", "yolo"})
"""Mode ids in which an agent changes files or runs commands without asking."""
ASKING_MODE = "default"


@dataclass
class SessionModes:
    """The modes one ACP session offers, the one it is in, the one it started in."""

    current: str
    available: list[str]
    original: str

    @classmethod
    def of(cls, state: SessionModeState | None) -> SessionModes | None:
        """The modes of a session/new, load or resume answer (None: no modes)."""
        if state is None or not state.available_modes:
            return None
        ids = [m.id for m in state.available_modes]
        return cls(current=state.current_mode_id, available=ids, original=state.current_mode_id)


def wanted_mode(modes: SessionModes, read_only: bool) -> str:
    """The mode a turn should run in (possibly the current one)."""
    if read_only:
        for mode in READ_ONLY_MODES:
            if mode in modes.available:
                return mode
    if modes.original in AUTO_APPROVE_MODES and ASKING_MODE in modes.available:
        return ASKING_MODE
    return modes.original
