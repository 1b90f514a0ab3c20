"""ACP option methods (``acp/…``): an agent's modes and models, chosen per session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.protocol.acp import ChooseParams, OptionsParams, OptionsReply
from tandem.protocol.base import MethodSpec
from tandem.turns import agent_options

if TYPE_CHECKING:
    from tandem.app import App


async def options(app: App, p: OptionsParams) -> OptionsReply:
    """The modes and models SESSION's ACP agent offers, the current and chosen ones."""
    return await agent_options.options(app.turns, p.session, p.provider)


async def choose(app: App, p: ChooseParams) -> OptionsReply:
    """Apply and record the choice of KIND (mode or model) for SESSION."""
    return await agent_options.choose(app.turns, p.session, p.kind, p.value, p.provider)


METHODS = [
    MethodSpec("acp/options", OptionsParams, options,
               "The modes and models of the session's ACP agent."),
    MethodSpec("acp/choose", ChooseParams, choose,
               "Choose the session's ACP agent mode or model (journaled)."),
]
