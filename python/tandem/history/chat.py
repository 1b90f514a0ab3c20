"""A chat turn as Emacs sends it: the session's choices, automatic compaction, the engine.

It sits above the turn engine because compaction does: when the projected
context passes the threshold the session is compacted first (a failed
automatic compaction is logged and the turn goes ahead).
"""

from __future__ import annotations

from tandem.history.compaction import CompactionService
from tandem.protocol.turns import Accepted
from tandem.providers.base import PermissionMode
from tandem.turns.requests import chat_request
from tandem.turns.service import TurnService


async def send(turns: TurnService, compactions: CompactionService, session: str, text: str,
               provider: str | None, model: str | None,
               permission_mode: PermissionMode | None) -> Accepted:
    """Accept TEXT as the next chat turn of SESSION and start it; its identity."""
    spec = await chat_request(turns, session, text, provider, model, permission_mode)
    await compactions.maybe_compact(spec.session, provider=spec.provider, text=text)
    turn = await turns.engine.accept(spec)
    return Accepted(session=spec.session, turn=turn)
