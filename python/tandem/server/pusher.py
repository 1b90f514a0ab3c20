"""Event push: coalesce events, encode them once, hand them to every connection.

Domain code calls `EventPusher.publish` (the `EventSink` protocol) with a
typed event (`tandem.protocol.events`) from the event loop. Events wait in
one queue; a distributor encodes them, at most every `INTERVAL` seconds
while deltas keep coming (at once after a quiet spell), and puts
them into each connection's `Outbox`, which numbers, batches (bounded by
bytes) and sends them on its own, so a slow client holds up no one.
Consecutive text deltas of a session merge, up to `DELTA_CHARS`, so a token
stream costs a handful of calls a second rather than one per token; sessions
streaming at once each merge their own (interleaved, their deltas would
otherwise never follow one another in the queue, and four streams cost one
call per token). Any other event
(``turn-ended``, a permission question, an entry) goes out at once, with
the deltas queued before it: only deltas gain by waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from tandem.protocol import sexp
from tandem.protocol.events import AnyEvent, Delta, Event
from tandem.server.outbox import Outbox

log = logging.getLogger("tandem.events")

INTERVAL = 0.03
"""Fewest seconds between two distributions while deltas keep coming.

Shorter than the view's frame (``tandem-view-frame-interval``, 50 ms) so
that every frame finds the text sent since the last: with both at 50 ms
the two clocks beat, and text that arrived just after a frame waited
for the next one, a second interval (10k deltas on screen in 110 ms
instead of 70). More often than a frame only costs Emacs a read and a
dispatch each: at 16 ms a 200 KB answer was ~590 calls, at 50 ms ~195,
at 30 ms ~320, for the same frames and the same CPU. A delta after a
quiet spell (none distributed for INTERVAL) goes at once: a stream's
first tokens are not held back; what follows merges."""
DELTA_CHARS = 256 * 1024
"""A merged delta grows to this many characters; a longer text is cut in pieces."""


class _Pending:
    """One queued event; a delta keeps its text as parts (joined once, linear)."""

    __slots__ = ("session", "kind", "payload", "parts", "chars")

    def __init__(self, session: str, kind: str, payload: dict[str, Any]) -> None:
        self.session = session
        self.kind = kind
        self.payload = payload
        """The fields sent (read, never changed)."""
        self.parts: list[str] = []
        self.chars = 0

    def merges(self, session: str, delta: Delta) -> bool:
        return (
            self.kind == "delta"
            and self.session == session
            and self.chars < DELTA_CHARS
            and self.payload["turn"] == delta["turn"]
            and self.payload["stream"] == delta["stream"]
        )

    def encode(self) -> bytes | None:
        event: dict[str, Any] = {"session": self.session, "kind": self.kind}
        event.update(self.payload)
        if self.parts:
            event["text"] = "".join(self.parts)
        try:
            return sexp.dumps(event).encode("utf-8")
        except sexp.SexpError:
            log.exception("event %s of %s not encodable: sent as a gap", self.kind, self.session)
            return None


class EventPusher:
    """The server's `EventSink`: queues events and feeds every connection's outbox."""

    def __init__(self) -> None:
        self.outboxes: list[Outbox] = []
        self._queue: list[_Pending] = []
        self._wake = asyncio.Event()
        self._urgent = False
        """A non-delta event is queued: distribute without waiting for more deltas."""
        self._flush = asyncio.Event()
        """Set with `_urgent`: ends a wait for more deltas already begun."""
        self._task: asyncio.Task[None] | None = None
        self._open: dict[str, _Pending] = {}
        """Each session's last queued delta, while nothing else of it follows."""
        self._last = float("-inf")
        """Loop time of the last distribution (deltas wait for INTERVAL after it)."""
        self._distributed: list[asyncio.Future[None]] = []
        """Resolved by the next distribution: it takes every event queued before."""

    @property
    def connections(self) -> list[Any]:
        """The connections events go to (each with its own outbox)."""
        return [o.conn for o in self.outboxes if not o.closed]

    def attach(self, conn: Any) -> Callable[[], Awaitable[None]]:
        """Deliver events to CONN (an authenticated `Connection`) from now on.

        Return what awaits, for CONN, every event published so far: a reply
        that must not overtake them (`MethodSpec.after_events`) waits on it.
        """
        outbox = Outbox(conn)
        self.outboxes.append(outbox)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return functools.partial(self.delivered, outbox)

    async def delivered(self, outbox: Outbox) -> None:
        """Return once every event published so far has been pushed through OUTBOX
        (or failed to be: the client then sees a gap)."""
        if self._queue:
            future = asyncio.get_running_loop().create_future()
            self._distributed.append(future)
            self._distribute_now()  # a reply is waiting: the deltas wait no longer
            await future
        await outbox.sent()

    def publish(self, session: str, event: AnyEvent) -> None:
        """Queue EVENT; consecutive deltas of one stream merge, long ones are cut."""
        if isinstance(event, Event):
            # The fields as they are (pydantic keeps them in __dict__; the model is
            # frozen and nests none): a tenth of model_dump's cost.
            self._queue.append(_Pending(session, event.kind, vars(event)))
            # Nothing queued before an event merges with a delta after it: every
            # session's order is kept (across sessions too, for any event).
            self._open.clear()
            self._distribute_now()  # only deltas gain by waiting
            return
        text = event["text"]
        last = self._open.get(session)
        while True:
            if last is None or not last.merges(session, event):
                last = _Pending(session, "delta", {"turn": event["turn"],
                                                   "stream": event["stream"]})
                self._queue.append(last)
                self._open[session] = last
            piece = text[: DELTA_CHARS - last.chars]
            last.parts.append(piece)
            last.chars += len(piece)
            text = text[len(piece):]
            if not text:
                break
        self._wake.set()

    def _distribute_now(self) -> None:
        """Distribute at once, ending a wait for more deltas already begun."""
        self._urgent = True
        self._wake.set()
        self._flush.set()

    def pending(self) -> int:
        """Number of events not yet handed to the connections."""
        return len(self._queue)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            wait = self._last + INTERVAL - loop.time()
            if not self._urgent and wait > 0:
                # Wait for more deltas, but not past a non-delta event: a turn's
                # end must not trail the reply that says the turn is over.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._flush.wait(), wait)
            self._flush.clear()
            self._urgent = False
            self._last = loop.time()
            queue, self._queue = self._queue, []
            waiting, self._distributed = self._distributed, []
            self._open = {}
            self.outboxes = [o for o in self.outboxes if not o.closed]
            if self.outboxes:
                for pending in queue:
                    event = pending.encode()
                    for outbox in self.outboxes:
                        outbox.put(pending.session, event)
            for future in waiting:
                if not future.done():
                    future.set_result(None)
