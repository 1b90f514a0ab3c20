"""Methods about a session's provider: switch it, count its tokens, list a server's models.

The switch is a journal entry (``provider_change``) so it survives a restart
and is seen by every front end; the next chat turn without an explicit
provider uses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tandem.protocol.base import MethodSpec, TandemError
from tandem.protocol.events import EntryEvent
from tandem.protocol.providers import (
    DefaultParams,
    ModelsParams,
    ModelsReply,
    SetProviderParams,
    UsageParams,
)
from tandem.providers.credentials import resolve_credentials
from tandem.providers.model_list import list_models, models_url
from tandem.providers.registry import parse_provider
from tandem.store.models import entry_to_dict
from tandem.turns.usage import session_provider_choice, session_usage

if TYPE_CHECKING:
    from tandem.app import App


async def set_provider(app: App, p: SetProviderParams) -> dict[str, Any]:
    """Record PROVIDER as SESSION's choice for its next turns; return the entry."""
    spec = parse_provider(p.provider)  # a clear error for a malformed name
    journal = app.sessions.journal(p.session)
    entry = journal.append({"type": "provider_change", "provider": spec.name,
                            "model": "" if spec.family == "acp" else spec.target})
    journal.sync()
    written = entry_to_dict(entry)
    app.events.publish(journal.id, EntryEvent(entry=written))
    return written


async def usage(app: App, p: UsageParams) -> dict[str, Any]:
    """SESSION's token totals, overall and per provider."""
    sessions = app.sessions
    journal = sessions.journal(p.session)
    entries = sessions.entries(journal)
    total, parts = session_usage(entries)
    chosen = session_provider_choice(entries)
    provider = chosen
    if provider is None:  # the default the next turn would use, if any
        try:
            provider = sessions.provider_for(sessions.settings(sessions.root_of(journal)), None)
        except TandemError:
            provider = None
    return {"total": total.model_dump(), "by_provider": [u.model_dump() for u in parts],
            "provider": provider, "chosen": chosen is not None}


async def models(app: App, p: ModelsParams) -> ModelsReply:
    """The models FAMILY's server lists, asked with the user's key (auth-source or env)."""
    given = app.turns.config.credentials.get(p.family) or {}
    creds = resolve_credentials(p.family, api_key=given.get("api_key"),
                                base_url=p.base_url or given.get("base_url"))
    return ModelsReply(url=models_url(creds), models=await list_models(creds, p.timeout))


async def default(app: App, p: DefaultParams) -> dict[str, Any]:
    """The provider a turn in CWD uses by default (settings, Emacs), or None: first run."""
    try:
        return {"provider": app.sessions.provider_for(app.sessions.settings(Path(p.cwd)), None)}
    except TandemError as e:
        if e.code != "no-provider":
            raise
        return {"provider": None}


METHODS = [
    MethodSpec("turns/set-provider", SetProviderParams, set_provider,
               "Switch a session's provider and model (a journal entry)."),
    MethodSpec("sessions/usage", UsageParams, usage, "Token totals of a session."),
    MethodSpec("providers/default", DefaultParams, default,
               "The default provider in a directory (none: the first run)."),
    MethodSpec("providers/models", ModelsParams, models,
               "List a provider server's models (GET /v1/models).", ModelsReply),
]
