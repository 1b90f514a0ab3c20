"""A session's choice of agent mode and model, applied to its ACP sessions.

The user picks a mode or model in Emacs (`tandem-acp-set-mode`,
`tandem-acp-set-model`); the choice is recorded in the journal (an
``acp_option`` entry), handed to the provider when it is built, and applied
to every ACP session the provider opens for the tandem session: modes with
``session/set_mode`` (subject to the permission mode: `acp_modes`), models
with ``session/set_config_option`` on the agent's ``model`` option.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from acp import RequestError
from acp.client.connection import ClientSideConnection

from tandem.protocol.acp import AcpChoice, OptionsReply
from tandem.protocol.base import TandemError
from tandem.providers.acp_client import AcpClient, error_text
from tandem.providers.acp_modes import wanted_mode
from tandem.providers.base import PermissionMode

log = logging.getLogger(__name__)

OptionKind = Literal["mode", "model"]
Guarded = Callable[[Awaitable[Any]], Awaitable[Any]]
"""Awaits an agent call, failing early when the agent dies or times out."""


AcpOptions = OptionsReply
"""What the agent offers and what is chosen: the protocol's reply, built here."""


class SessionOptions:
    """The mode and model choices of one tandem session (see the module docstring)."""

    def __init__(self, agent: str, client: AcpClient, choices: dict[str, str] | None) -> None:
        self.agent = agent
        self.client = client
        self.choices: dict[str, str] = {
            k: v for k, v in (choices or {}).items() if k in ("mode", "model") and v
        }

    def report(self, acp_id: str) -> AcpOptions:
        """The options of ACP session ACP_ID."""
        modes = self.client.modes.get(acp_id)
        models = self.client.models.get(acp_id)
        return AcpOptions(
            agent=self.agent,
            modes=[AcpChoice(id=m, name=modes.names.get(m, m)) for m in modes.available]
            if modes else [],
            mode=modes.current if modes else None,
            models=[AcpChoice(id=m, name=models.names.get(m, m)) for m in models.available]
            if models else [],
            model=models.current if models else None,
            chosen=dict(self.choices),
        )

    def check(self, acp_id: str, kind: OptionKind, value: str) -> None:
        """Raise `TandemError` unless the agent offers VALUE as a KIND."""
        options = self.report(acp_id)
        offered = options.modes if kind == "mode" else options.models
        if not offered:
            raise TandemError("unsupported", f"ACP agent {self.agent} offers no {kind}s")
        if value not in {c.id for c in offered}:
            ids = ", ".join(c.id for c in offered)
            raise TandemError("invalid", f"ACP agent {self.agent} has no {kind} {value!r} ({ids})")

    async def apply(self, conn: ClientSideConnection, guarded: Guarded, acp_id: str,
                    read_only: bool, permission_mode: PermissionMode) -> None:
        """Put ACP session ACP_ID in the wanted mode and the chosen model."""
        modes = self.client.modes.get(acp_id)
        if modes is not None:
            wanted = wanted_mode(modes, read_only, permission_mode, self.choices.get("mode"))
            if wanted != modes.current:
                try:
                    await guarded(conn.set_session_mode(session_id=acp_id, mode_id=wanted))
                    modes.current = wanted
                except RequestError as exc:
                    # The permission answers still enforce the mode; log and go on.
                    log.warning("ACP agent %s refused mode %s: %s", self.agent, wanted,
                                error_text(exc))
        models = self.client.models.get(acp_id)
        model = self.choices.get("model")
        if models is not None and model and model != models.current and model in models.available:
            try:
                await guarded(conn.set_config_option(
                    config_id=models.config_id, session_id=acp_id, value=model))
                models.current = model
            except RequestError as exc:
                log.warning("ACP agent %s refused model %s: %s", self.agent, model,
                            error_text(exc))
