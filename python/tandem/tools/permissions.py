"""Permission decisions for native tools: modes, the read-only ceiling, session grants."""

from __future__ import annotations

import threading
from typing import Literal

from tandem.config.layers import read_layer, user_settings_path
from tandem.config.rules import PermissionRule
from tandem.protocol.base import TandemError
from tandem.tools.types import PermissionMode, ToolKind

Decision = Literal["allow", "ask", "refuse"]

PERMISSION_MODES: tuple[PermissionMode, ...] = ("ask", "auto-edit", "read-only")


class SessionGrants:
    """ "Allow for this session" answers, remembered per (session, tool name).

    Process-wide and in memory only: a new backend asks again, which errs on
    the side of asking.
    """

    def __init__(self) -> None:
        self._granted: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def grant(self, session_id: str, tool: str) -> None:
        """Remember that TOOL may run without asking in SESSION_ID."""
        with self._lock:
            self._granted.add((session_id, tool))

    def granted(self, session_id: str, tool: str) -> bool:
        """Whether TOOL was allowed for the whole session SESSION_ID."""
        with self._lock:
            return (session_id, tool) in self._granted

    def forget_session(self, session_id: str) -> None:
        """Drop every grant of SESSION_ID (the session closed)."""
        with self._lock:
            self._granted = {g for g in self._granted if g[0] != session_id}


GRANTS = SessionGrants()
"""The backend's grants, shared by every native provider."""


def decide(
    kind: ToolKind, mode: PermissionMode, read_only: bool, session_granted: bool
) -> Decision:
    """Whether a tool of capability KIND runs, needs asking, or is refused.

    ``read`` always runs. Under the read-only ceiling (a discussion) or in
    ``read-only`` mode everything else is refused, whatever was granted. In
    ``auto-edit`` edits run and execution asks; in ``ask`` both ask, unless the
    user allowed this tool for the session.
    """
    if mode not in PERMISSION_MODES:
        raise ValueError(f"unknown permission mode {mode!r}")
    if kind == "read":
        return "allow"
    if read_only or mode == "read-only":
        return "refuse"
    if session_granted:
        return "allow"
    if mode == "auto-edit" and kind == "edit":
        return "allow"
    return "ask"


def user_rules() -> list[PermissionRule]:
    """The permission rules of the user's own settings file (never a project's).

    A user file that does not validate yields no rule: every call is asked,
    which errs on the side of asking (the turn reports the file's error itself).
    """
    try:
        return list(read_layer(user_settings_path()).typed().permission_rules or [])
    except TandemError:
        return []
