"""Turn methods for Emacs: send, cancel, answer, status, wait, configure."""

from __future__ import annotations

import asyncio
import json
from typing import Any

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
from tandem.sessions.compaction_api import maybe_compact
from tandem.turns.engine import TurnSpec
from tandem.turns.service import (
    ClientConfig,
    choose_permission_mode,
    choose_provider,
    turns,
)
from tandem.turns.usage import session_provider_choice


async def send(app: Any, p: SendParams) -> Accepted:
    """Accept TEXT as the next chat turn of SESSION and start it."""
    service = turns(app)
    journal = service.journal(p.session)
    settings = service.settings(service.root_of(journal))
    # The session's own choice (M-x tandem-set-provider) wins over the default.
    requested = p.provider or session_provider_choice(service.entries(journal))
    spec = TurnSpec(session=journal.id, text=p.text,
                    provider=choose_provider(settings, requested), model=p.model or "",
                    permission_mode=choose_permission_mode(settings, p.permission_mode,
                                                           service.config))
    # Automatic compaction when the projected context passes the threshold
    # (a failed automatic compaction is logged and the turn goes ahead).
    await maybe_compact(app, journal.id, provider=spec.provider, text=p.text)
    turn = await service.engine.accept(spec)
    return Accepted(session=journal.id, turn=turn)


async def cancel(app: Any, p: SessionParams) -> dict[str, bool]:
    """Cancel SESSION's turn in flight; it ends aborted through the terminal path."""
    return {"cancelled": turns(app).engine.cancel(turns(app).journal(p.session).id)}


async def answer(app: Any, p: AnswerParams) -> dict[str, bool]:
    """Answer a permission question of SESSION's running turn."""
    ok = turns(app).engine.answer(turns(app).journal(p.session).id, p.interaction_id, p.answer)
    if not ok:
        raise TandemError("not-found", f"No pending question {p.interaction_id} in {p.session}")
    return {"answered": True}


async def status(app: Any, p: TurnParams) -> TurnStatus:
    """Where turn TURN of SESSION stands."""
    return TurnStatus(**turns(app).engine.status(turns(app).journal(p.session).id, p.turn))


async def wait(app: Any, p: TurnParams) -> TurnStatus:
    """Wait up to TIMEOUT seconds for TURN to end; return its status either way."""
    engine = turns(app).engine
    session = turns(app).journal(p.session).id
    if p.timeout:
        try:
            await asyncio.wait_for(engine.wait(session, p.turn), timeout=p.timeout)
        except TimeoutError:
            pass
    return TurnStatus(**engine.status(session, p.turn))


async def configure(app: Any, p: ConfigureParams) -> dict[str, Any]:
    """Take the front end's configuration (in memory only)."""
    service = turns(app)
    agents = {a.name: {"command": a.command, "env": dict(a.env)} for a in p.acp_agents}
    custom: dict[str, Any] = {}
    if p.settings_json:
        try:
            data = json.loads(p.settings_json)
        except ValueError as exc:
            raise TandemError("invalid-settings", f"Settings from Emacs: invalid JSON: {exc}"
                              ) from None
        custom = validate(data, "from Emacs customization").plain()
    config = ClientConfig(acp_agents=agents, credentials=p.credentials,
                          default_provider=p.default_provider, permission_mode=p.permission_mode,
                          settings=custom)
    if config != service.config:  # Emacs sends this before every turn
        service.config = config
        service.forget_providers()
    return {"acp_agents": sorted(agents), "credentials": sorted(p.credentials)}


METHODS = [
    MethodSpec("turns/send", SendParams, send, "Send a chat turn; returns its identity."),
    MethodSpec("turns/cancel", SessionParams, cancel, "Cancel the turn in flight."),
    MethodSpec("turns/answer", AnswerParams, answer, "Answer a permission question."),
    MethodSpec("turns/status", TurnParams, status, "Where a turn stands."),
    MethodSpec("turns/wait", TurnParams, wait, "Wait for a turn to end."),
    MethodSpec("turns/configure", ConfigureParams, configure,
               "Set ACP agents, credentials and defaults (memory only)."),
]
