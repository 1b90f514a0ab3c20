"""Edit and resend: rewind before turn N, then send the edited request as a new turn.

One backend call rather than two from Emacs, so that nothing can take the
session between the halves: the rewind holds the session in the gate until
its entry is synced, and the turn engine takes the gate again before this
coroutine yields to the event loop (releasing the rewind's hold and
acquiring the turn's involve no ``await``), so no other turn, queued
message, compaction or second client starts in between.

Crash safety is that of its two halves, each already one recoverable unit:
the rewind's entry is its commit point (`tandem.rewind.service`), and the
new turn is accepted only after it. A crash between them leaves a committed
rewind, which ``sessions/rewind-undo`` undoes, and no new turn (the edited
text stays in the composer); nothing is half-done.

The new turn is checked before anything changes (the provider it would use
exists and is configured), so a resend that cannot send does not rewind.
Automatic compaction is not run before the resent turn: the context is the
one the kept turns already ran with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.protocol.base import TandemError
from tandem.protocol.turns import Resent
from tandem.providers.base import PermissionMode
from tandem.turns.requests import chat_request
from tandem.turns.service import TurnService

if TYPE_CHECKING:  # built on first use (`App.rewinds`): not imported with the adapters
    from tandem.rewind.service import RewindService


async def resend(rewinds: RewindService, turns: TurnService, session: str, before_turn: int,
                 digest: str, text: str, provider: str | None, model: str | None,
                 permission_mode: PermissionMode | None) -> Resent:
    """Rewind SESSION before BEFORE_TURN as planned with DIGEST, then send TEXT as a turn."""
    if not text.strip():
        raise TandemError("invalid", "Nothing to send: the edited request is empty; "
                          "nothing was rewound")
    spec = await chat_request(turns, session, text, provider, model, permission_mode)
    # Refuses an unknown or unconfigured provider now, before the rewind.
    turns.provider(spec, turns.sessions.journal(spec.session))
    done = await rewinds.rewind(spec.session, before_turn, digest, resend=True)
    try:
        turn = await turns.engine.accept(spec)
    except TandemError as e:
        raise TandemError(e.code, f"Rewound before turn {before_turn}, but the edited request "
                          f"could not be sent: {e.message}. Undoing the rewind brings the "
                          "turns back", data={"rewind_seq": done.seq}) from e
    return Resent(session=done.session, turn=turn, before_turn=before_turn,
                  rewind_seq=done.seq, backup=done.backup, rewound=done.turns,
                  restored=done.restored, deleted=done.deleted)
