"""An ACP agent's modes and models, chosen per session.

The options come from the agent (opening the root chat's ACP session when
none is open); a choice is applied to the live ACP session and recorded as
an ``acp_option`` entry, from which the session's provider is built with
its choices next time (`TurnService.provider`).
"""

from __future__ import annotations

from typing import Any

from tandem.protocol.acp import OptionsReply
from tandem.protocol.base import TandemError
from tandem.providers.base import PermissionMode
from tandem.providers.registry import parse_provider
from tandem.store.journal import Journal
from tandem.turns.engine import TurnSpec
from tandem.turns.service import TurnService


def _acp_provider(turns: TurnService, session: str,
                  requested: str | None) -> tuple[Any, Journal, PermissionMode]:
    sessions = turns.sessions
    journal = sessions.journal(session)
    settings = sessions.settings(sessions.root_of(journal))
    name = sessions.provider_for(settings, requested)
    if parse_provider(name).family != "acp":
        raise TandemError("invalid", f"{name} is not an ACP agent: modes and models are "
                          "chosen for acp:AGENT providers")
    spec = TurnSpec(session=journal.id, text="", provider=name)
    provider = turns.provider(spec, journal)
    return provider, journal, sessions.permission_mode(settings, None)


async def options(turns: TurnService, session: str, provider: str | None) -> OptionsReply:
    """The modes and models SESSION's ACP agent offers, the current and chosen ones."""
    agent, journal, _mode = _acp_provider(turns, session, provider)
    report = await agent.session_options(turns.sessions.root_of(journal))
    return OptionsReply.model_validate(report, from_attributes=True)


async def choose(turns: TurnService, session: str, kind: str, value: str,
                 provider: str | None) -> OptionsReply:
    """Apply and record the choice of KIND (mode or model) for SESSION."""
    agent, journal, mode = _acp_provider(turns, session, provider)
    report = await agent.choose(kind, value, turns.sessions.root_of(journal), mode)
    journal.append({"type": "acp_option", "agent": agent.name, "option": kind,
                    "value": value})
    journal.sync()
    return OptionsReply.model_validate(report, from_attributes=True)
