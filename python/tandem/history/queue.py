"""The queue's driver: queued messages go as the next turns when a turn ends well.

The backend drives the queue, not Emacs: the engine calls `QueueService.on_turn_ended`
once a turn's session is free, and a turn that ended well sends the first
queued message as an ordinary chat turn (through `tandem.history.chat`, so
automatic compaction applies as to any send). So the queue goes on while
Emacs is busy, closed or reconnecting. A turn that did not end well holds
the queue; `resume` sends it on. The queue's entries and their fold are
`tandem.turns.queue`'s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from tandem.events import EventSink
from tandem.history.chat import send as send_chat
from tandem.protocol.base import TandemError
from tandem.protocol.turns import PendingSteer, QueuedMessage, QueueReply
from tandem.store.journal import Journal
from tandem.turns import queue
from tandem.turns.engine import TurnEnded
from tandem.turns.service import TurnService

if TYPE_CHECKING:
    from tandem.history.compaction import CompactionService

log = logging.getLogger("tandem.queue")


class QueueService:
    """Each session's queue: add, edit, remove, list, resume, and sending it on."""

    def __init__(self, events: EventSink, turns: TurnService,
                 compactions: Callable[[], CompactionService]) -> None:
        self.events = events
        self.turns = turns
        self._compactions = compactions
        """The compaction service, built on first use (a send may compact first)."""
        self._tasks: set[asyncio.Task[int | None]] = set()

    # -- reading -------------------------------------------------------------

    def _journal(self, session: str) -> Journal:
        return self.turns.sessions.journal(session)

    def state(self, journal: Journal) -> queue.QueueState:
        """JOURNAL's queue as its entries leave it."""
        return queue.fold(self.turns.sessions.entries(journal))

    def _running(self, journal: Journal) -> int | None:
        running = self.turns.engine.running.get(journal.id)
        return running.turn if running is not None else None

    def reply(self, journal: Journal, sent_turn: int | None = None) -> QueueReply:
        """What the queue methods answer: the queue of JOURNAL now."""
        state = self.state(journal)
        running = self.turns.engine.running.get(journal.id)
        steers = running.sink.steers_pending() if running is not None else []
        return QueueReply(session=journal.id, held=state.held, running=self._running(journal),
                          sent_turn=sent_turn, limit=queue.MAX_ITEMS,
                          items=[QueuedMessage(id=m.id, text=m.text, ts=m.ts)
                                 for m in state.items],
                          steers=[PendingSteer(text=t, given=g) for t, g in steers])

    def list(self, session: str) -> QueueReply:
        """SESSION's queue. A queue left waiting with no turn running (the backend
        stopped during the turn, or between its end and the next send) is held
        here, with why, so that it never goes on unasked after a restart."""
        journal = self._journal(session)
        if journal.writable and self.turns.gate.holder(journal.id) is None:
            state = self.state(journal)
            # Only a queue to hold writes anything: listing an empty queue (every
            # view open does) leaves the journal as it is.
            if state.items and state.held is None:
                self.turns.engine.repair(journal)  # the hold names how the turn ended
                queue.write(journal, self.events,
                            queue.op("hold", reason=self._idle_reason(journal)))
        return self.reply(journal)

    def _idle_reason(self, journal: Journal) -> str:
        index = self.turns.sessions.index(journal)
        last = index.get(index.next_turn() - 1)
        end = last.end if last is not None else None
        if end is not None and end.outcome != "succeeded":
            return queue.hold_reason(end.turn, end.outcome, end.error)
        return "the backend stopped before sending it"

    # -- changing ------------------------------------------------------------

    async def add(self, session: str, text: str) -> QueueReply:
        """Queue TEXT at the end; with no turn running (and no hold) it is sent at once."""
        journal = self._journal(session)
        queue.write(journal, self.events, queue.add_entry(self.state(journal), text))
        return self.reply(journal, await self.pump(journal.id))

    def edit(self, session: str, item: str, text: str) -> QueueReply:
        """Make TEXT the text of the queued message ITEM (not-found once it was sent)."""
        journal = self._journal(session)
        queue.find(self.state(journal), item)
        queue.write(journal, self.events, queue.op("edit", item, text=queue.check_text(text)))
        return self.reply(journal)

    def remove(self, session: str, item: str) -> QueueReply:
        """Delete the queued message ITEM (not-found once it was sent)."""
        journal = self._journal(session)
        queue.find(self.state(journal), item)
        queue.write(journal, self.events, queue.op("remove", item))
        return self.reply(journal)

    async def resume(self, session: str) -> QueueReply:
        """Lift the hold and send the first queued message (after the running turn, if one)."""
        journal = self._journal(session)
        state = self.state(journal)
        if not state.items:
            raise TandemError("not-found", "The queue is empty: nothing to send")
        if state.held is not None:
            queue.write(journal, self.events, queue.op("resume"))
        return self.reply(journal, await self.pump(journal.id))

    # -- driving -------------------------------------------------------------

    async def pump(self, session: str) -> int | None:
        """Send SESSION's first queued message as its next turn when nothing holds
        the session or the queue; the turn started, or None.

        The turn is accepted before its ``sent`` entry is written (nothing awaits
        between the two), so a refused send loses nothing: it holds the queue
        with the refusal's sentence instead.
        """
        journal = self._journal(session)
        state = self.state(journal)
        if not state.items or state.held is not None or not journal.writable:
            return None
        if self.turns.gate.holder(journal.id) is not None:
            return None  # a turn, rewind or compaction runs: its end sends the queue on
        first = state.items[0]
        try:
            accepted = await send_chat(self.turns, self._compactions(), journal.id, first.text,
                                       None, None, None)
        except TandemError as e:
            if e.code == "busy":
                return None
            queue.write(journal, self.events,
                        queue.op("hold", reason=f"{first.id} could not be sent: {e.message}"))
            return None
        queue.write(journal, self.events, queue.op("sent", first.id, sent_turn=accepted.turn))
        return accepted.turn

    def on_turn_ended(self, ended: TurnEnded) -> None:
        """After ENDED (its session free again): send the queue on, or hold it.

        Guidance the turn ended before taking (``steers_left``) joins the
        queue's front first, so it goes as the next turn (or waits first).
        """
        journal = self._journal(ended.session)
        state = self.state(journal)
        if ended.steers_left and journal.writable:
            for entry in queue.steer_entries(state, ended.steers_left):
                queue.write(journal, self.events, entry)
            state = self.state(journal)
        if not state.items or state.held is not None:
            return
        if ended.outcome != "succeeded":
            queue.write(journal, self.events, queue.op(
                "hold", reason=queue.hold_reason(ended.turn, ended.outcome, ended.error)))
            return
        task = asyncio.get_running_loop().create_task(self._pump_logged(ended.session))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _pump_logged(self, session: str) -> int | None:
        try:
            return await self.pump(session)
        except Exception:  # the queue stays as it is; the next turn's end tries again
            log.exception("sending the queue of %s failed", session)
            return None

    async def background_done(self) -> None:
        """Wait for the sends that turn ends started (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
