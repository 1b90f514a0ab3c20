"""The client half of ACP: the callbacks an agent makes into tandem."""

from __future__ import annotations

import logging
from typing import Any

from acp import RequestError
from acp.schema import (
    CurrentModeUpdate,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from tandem.providers.acp_modes import SessionModes
from tandem.providers.acp_turn import AcpTurn

log = logging.getLogger(__name__)


class AcpClient:
    """The ACP client side: routes agent callbacks to the turn they belong to.

    It implements only ``session/update`` and ``session/request_permission``;
    ``fs/*`` and terminal requests get "method not found" (none is advertised).
    """

    def __init__(self) -> None:
        self.turns: dict[str, AcpTurn] = {}
        self.modes: dict[str, SessionModes] = {}
        """Mode state of each session that has modes, kept current from updates."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """``session/update``: report UPDATE to its turn (ignored outside a turn)."""
        if isinstance(update, CurrentModeUpdate) and session_id in self.modes:
            self.modes[session_id].current = update.current_mode_id
        turn = self.turns.get(session_id)
        if turn is not None and turn.failure is None:
            try:
                turn.on_update(update)
            except Exception as exc:
                # The sink could not record it: end the turn rather than lose entries.
                log.exception("ACP turn: the sink failed")
                turn.fail(f"could not record the agent's output: {error_text(exc)}")

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        """``session/request_permission``: answered by the turn's policy or its user."""
        turn = self.turns.get(session_id)
        if turn is None:
            # No turn to ask for: nobody can answer, so nothing is allowed.
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        try:
            return await turn.on_permission(tool_call, options)
        except Exception as exc:
            log.exception("ACP turn: asking permission failed")
            turn.fail(f"could not ask for permission: {error_text(exc)}")
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Extension requests: none is supported."""
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications: ignored."""
        return None


def error_text(exc: BaseException) -> str:
    """A readable message for EXC, with an ACP error's details."""
    if isinstance(exc, RequestError):
        data = exc.data
        detail = ""
        if isinstance(data, dict):
            detail = str(data.get("details") or data.get("message") or "")
        elif data:
            detail = str(data)
        return f"{exc}" + (f": {detail}" if detail and detail not in str(exc) else "")
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
