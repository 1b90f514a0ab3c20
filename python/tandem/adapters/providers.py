"""Provider methods (``providers/…``): the default provider of a directory, a server's models."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.protocol.base import MethodSpec
from tandem.protocol.providers import DefaultParams, DefaultReply, ModelsParams, ModelsReply
from tandem.turns.requests import default_provider, server_models

if TYPE_CHECKING:
    from tandem.app import App


async def models(app: App, p: ModelsParams) -> ModelsReply:
    """The models FAMILY's server lists, asked with the user's key (auth-source or env)."""
    return await server_models(app.turns, p.family, p.base_url, p.timeout)


async def default(app: App, p: DefaultParams) -> DefaultReply:
    """The provider a turn in CWD uses by default (settings, Emacs), or None: first run."""
    return DefaultReply(provider=default_provider(app.sessions, p.cwd))


METHODS = [
    MethodSpec("providers/default", DefaultParams, default,
               "The default provider in a directory (none: the first run)."),
    MethodSpec("providers/models", ModelsParams, models,
               "List a provider server's models (GET /v1/models).", ModelsReply),
]
