"""Turn methods for Emacs: send, cancel, answer, status, wait, configure."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from tandem.config.front_end import ClientConfig, RemoteHost
from tandem.config.model import validate
from tandem.protocol.base import MethodSpec, TandemError
from tandem.protocol.turns import (
    Accepted,
    AnswerParams,
    ConfigureParams,
    SendParams,
    SessionParams,
    TurnParams,
    TurnStatus,
)
from tandem.turns.engine import TurnSpec
from tandem.turns.usage import session_provider_choice

if TYPE_CHECKING:
    from tandem.app import App


async def send(app: App, p: SendParams) -> Accepted:
    """Accept TEXT as the next chat turn of SESSION and start it."""
    sessions = app.sessions
    journal = sessions.journal(p.session)
    settings = sessions.settings(sessions.root_of(journal))
    # The session's own choice (M-x tandem-set-provider) wins over the default.
    requested = p.provider or session_provider_choice(sessions.entries(journal))
    spec = TurnSpec(session=journal.id, text=p.text,
                    provider=sessions.provider_for(settings, requested), model=p.model or "",
                    permission_mode=sessions.permission_mode(settings, p.permission_mode))
    # Automatic compaction when the projected context passes the threshold
    # (a failed automatic compaction is logged and the turn goes ahead).
    await app.compactions.maybe_compact(journal.id, provider=spec.provider, text=p.text)
    turn = await app.turns.engine.accept(spec)
    return Accepted(session=journal.id, turn=turn)


async def cancel(app: App, p: SessionParams) -> dict[str, bool]:
    """Cancel SESSION's turn in flight; it ends aborted through the terminal path."""
    return {"cancelled": app.turns.engine.cancel(app.sessions.journal(p.session).id)}


async def answer(app: App, p: AnswerParams) -> dict[str, bool]:
    """Answer a permission question of SESSION's running turn."""
    ok = app.turns.engine.answer(app.sessions.journal(p.session).id, p.interaction_id,
                                 p.answer)
    if not ok:
        raise TandemError("not-found", f"No pending question {p.interaction_id} in {p.session}")
    return {"answered": True}


async def status(app: App, p: TurnParams) -> TurnStatus:
    """Where turn TURN of SESSION stands."""
    return TurnStatus(**app.turns.engine.status(app.sessions.journal(p.session).id, p.turn))


async def wait(app: App, p: TurnParams) -> TurnStatus:
    """Wait up to TIMEOUT seconds for TURN to end; return its status either way."""
    engine = app.turns.engine
    session = app.sessions.journal(p.session).id
    if p.timeout:
        try:
            await asyncio.wait_for(engine.wait(session, p.turn), timeout=p.timeout)
        except TimeoutError:
            pass
    return TurnStatus(**engine.status(session, p.turn))


async def configure(app: App, p: ConfigureParams) -> dict[str, Any]:
    """Take the front end's configuration (in memory only)."""
    agents = {a.name: {"command": a.command, "env": dict(a.env)} for a in p.acp_agents}
    custom: dict[str, Any] = {}
    if p.settings_json:
        try:
            data = json.loads(p.settings_json)
        except ValueError as exc:
            raise TandemError("invalid-settings", f"Settings from Emacs: invalid JSON: {exc}"
                              ) from None
        custom = validate(data, "from Emacs customization").plain()
    hosts = {h.name: RemoteHost(url=h.url, forward_keys=h.forward_keys,
                                agent_profile=h.agent_profile, api_key=h.api_key)
             for h in p.remote_hosts}
    # Emacs sends this before every turn; providers are rebuilt only on a change.
    app.turns.configure(ClientConfig(acp_agents=agents, credentials=p.credentials,
                                     remote_hosts=hosts,
                                     default_provider=p.default_provider,
                                     permission_mode=p.permission_mode, settings=custom))
    return {"acp_agents": sorted(agents), "credentials": sorted(p.credentials),
            "remote_hosts": sorted(hosts)}


METHODS = [
    MethodSpec("turns/send", SendParams, send, "Send a chat turn; returns its identity."),
    MethodSpec("turns/cancel", SessionParams, cancel, "Cancel the turn in flight."),
    MethodSpec("turns/answer", AnswerParams, answer, "Answer a permission question."),
    MethodSpec("turns/status", TurnParams, status, "Where a turn stands."),
    MethodSpec("turns/wait", TurnParams, wait, "Wait for a turn to end."),
    MethodSpec("turns/configure", ConfigureParams, configure,
               "Set ACP agents, credentials and defaults (memory only)."),
]
