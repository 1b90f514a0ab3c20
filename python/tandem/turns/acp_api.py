"""ACP option methods for Emacs: an agent's modes and models, chosen per session.

``acp/options`` answers what the agent offers (opening the root chat's ACP
session when none is open); ``acp/choose`` applies a choice to the live ACP
session and records it as an ``acp_option`` entry, from which the session's
provider is built with its choices next time (`TurnService.provider`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tandem.protocol.acp import ChooseParams, OptionsParams
from tandem.protocol.base import MethodSpec, TandemError
from tandem.providers.registry import parse_provider
from tandem.turns.engine import TurnSpec

if TYPE_CHECKING:
    from tandem.app import App


def _acp_provider(app: App, session: str, requested: str | None) -> tuple[Any, Any, str]:
    service, sessions = app.turns, app.sessions
    journal = sessions.journal(session)
    settings = sessions.settings(sessions.root_of(journal))
    name = sessions.provider_for(settings, requested)
    if parse_provider(name).family != "acp":
        raise TandemError("invalid", f"{name} is not an ACP agent: modes and models are "
                          "chosen for acp:AGENT providers")
    spec = TurnSpec(session=journal.id, text="", provider=name)
    provider = service.provider(spec, journal)
    return provider, journal, sessions.permission_mode(settings, None)


async def options(app: App, p: OptionsParams) -> dict[str, Any]:
    """The modes and models SESSION's ACP agent offers, the current and chosen ones."""
    provider, journal, _mode = _acp_provider(app, p.session, p.provider)
    report = await provider.session_options(app.sessions.root_of(journal))
    result: dict[str, Any] = report.model_dump(mode="json")
    return result


async def choose(app: App, p: ChooseParams) -> dict[str, Any]:
    """Apply and record the choice of KIND (mode or model) for SESSION."""
    provider, journal, mode = _acp_provider(app, p.session, p.provider)
    report = await provider.choose(p.kind, p.value, app.sessions.root_of(journal), mode)
    journal.append({"type": "acp_option", "agent": provider.name, "option": p.kind,
                    "value": p.value})
    journal.sync()
    result: dict[str, Any] = report.model_dump(mode="json")
    return result


METHODS = [
    MethodSpec("acp/options", OptionsParams, options,
               "The modes and models of the session's ACP agent."),
    MethodSpec("acp/choose", ChooseParams, choose,
               "Choose the session's ACP agent mode or model (journaled)."),
]
