"""Turn methods (``turns/…``): send, cancel, answer, status, wait, configure, set-provider,
the queue (queue, queue-edit, queue-remove, queue-list, queue-send) and steer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.history.chat import send as send_chat
from tandem.protocol.base import MethodSpec
from tandem.protocol.sessions import WrittenEntry
from tandem.protocol.turns import (
    Accepted,
    Answered,
    AnswerParams,
    Cancelled,
    Configured,
    ConfigureParams,
    QueueEditParams,
    QueueItemParams,
    QueueParams,
    QueueReply,
    ResendParams,
    Resent,
    SendParams,
    SessionParams,
    SetProviderParams,
    SteerParams,
    SteerReply,
    TurnParams,
    TurnStatus,
)
from tandem.rewind.resend import resend as resend_chat
from tandem.turns import requests

if TYPE_CHECKING:
    from tandem.app import App


async def send(app: App, p: SendParams) -> Accepted:
    """Accept TEXT as the next chat turn of SESSION and start it."""
    return await send_chat(app.turns, app.compactions, p.session, p.text, p.provider, p.model,
                           p.permission_mode, p.images)


async def resend(app: App, p: ResendParams) -> Resent:
    """Rewind SESSION before TURN as planned, then send TEXT as a new chat turn."""
    return await resend_chat(app.rewinds, app.turns, p.session, p.turn, p.digest, p.text,
                             p.provider, p.model, p.permission_mode)


async def cancel(app: App, p: SessionParams) -> Cancelled:
    """Cancel SESSION's turn in flight; it ends aborted through the terminal path."""
    return Cancelled(cancelled=requests.cancel(app.turns, p.session))


async def answer(app: App, p: AnswerParams) -> Answered:
    """Answer a permission question of SESSION's running turn."""
    requests.answer(app.turns, p.session, p.interaction_id, p.answer, p.content, p.reason)
    return Answered(answered=True)


async def status(app: App, p: TurnParams) -> TurnStatus:
    """Where turn TURN of SESSION stands."""
    return requests.status(app.turns, p.session, p.turn)


async def wait(app: App, p: TurnParams) -> TurnStatus:
    """Wait up to TIMEOUT seconds for TURN to end; return its status either way."""
    return await requests.wait(app.turns, p.session, p.turn, p.timeout)


async def configure(app: App, p: ConfigureParams) -> Configured:
    """Take the front end's configuration (in memory only)."""
    return requests.configure(app.turns, p.acp_agents, p.credentials, p.default_provider,
                              p.permission_mode, p.settings_json, p.remote_hosts)


async def set_provider(app: App, p: SetProviderParams) -> WrittenEntry:
    """Record PROVIDER as SESSION's choice for its next turns; return the entry."""
    return requests.set_provider(app.sessions, app.events, p.session, p.provider)


async def steer(app: App, p: SteerParams) -> SteerReply:
    """Give TEXT to SESSION's running turn for its next model request."""
    return requests.steer(app.turns, p.session, p.text)


async def queue(app: App, p: QueueParams) -> QueueReply:
    """Queue TEXT in SESSION; it goes as the next turn when the running one ends well."""
    return await app.queue.add(p.session, p.text)


async def queue_edit(app: App, p: QueueEditParams) -> QueueReply:
    """Replace the text of queued message ITEM."""
    return app.queue.edit(p.session, p.item, p.text)


async def queue_remove(app: App, p: QueueItemParams) -> QueueReply:
    """Delete queued message ITEM."""
    return app.queue.remove(p.session, p.item)


async def queue_list(app: App, p: SessionParams) -> QueueReply:
    """SESSION's queue (one left waiting by a stopped backend is held here)."""
    return app.queue.list(p.session)


async def queue_send(app: App, p: SessionParams) -> QueueReply:
    """Send a held queue on: its first message now, or after the running turn."""
    return await app.queue.resume(p.session)


METHODS = [
    MethodSpec("turns/send", SendParams, send, "Send a chat turn; returns its identity."),
    MethodSpec("turns/resend", ResendParams, resend,
               "Edit and resend: rewind before a turn as planned, then send the edited "
               "text as a new turn (one step; undone by sessions/rewind-undo).", Resent),
    MethodSpec("turns/cancel", SessionParams, cancel, "Cancel the turn in flight."),
    MethodSpec("turns/answer", AnswerParams, answer, "Answer a permission question."),
    MethodSpec("turns/status", TurnParams, status, "Where a turn stands."),
    MethodSpec("turns/wait", TurnParams, wait, "Wait for a turn to end.", after_events=True),
    MethodSpec("turns/configure", ConfigureParams, configure,
               "Set ACP agents, credentials and defaults (memory only)."),
    MethodSpec("turns/set-provider", SetProviderParams, set_provider,
               "Switch a session's provider and model (a journal entry)."),
    MethodSpec("turns/steer", SteerParams, steer,
               "Give guidance to the running turn at its next step (native, remote)."),
    MethodSpec("turns/queue", QueueParams, queue,
               "Queue a message for after the running turn (a journal entry)."),
    MethodSpec("turns/queue-edit", QueueEditParams, queue_edit, "Edit a queued message."),
    MethodSpec("turns/queue-remove", QueueItemParams, queue_remove, "Delete a queued message."),
    MethodSpec("turns/queue-list", SessionParams, queue_list, "A session's queue."),
    MethodSpec("turns/queue-send", SessionParams, queue_send,
               "Send a held queue on (after a failed or cancelled turn)."),
]
