"""One connection's event queue: numbered, batched by bytes, sent one batch at a time.

Each authenticated connection has its own `Outbox` and sender task, so a
client that is slow or silent delays only itself. Sequence numbers are per
connection and session (what the client checks). An event that cannot be
delivered (the push failed, it is too large to frame, or the client fell
too far behind) still uses up its number, and a ``resync`` event follows:
the client sees the jump, runs ``tandem-event-gap-functions`` and the view
refetches the journal, so nothing — ``turn-ended`` included — is lost for good.
`Outbox.sent` awaits everything put so far: what a reply that must follow
its events waits on (`tandem.protocol.base.MethodSpec.after_events`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict, deque
from typing import Any

from tandem.protocol import sexp
from tandem.server import framing

log = logging.getLogger("tandem.events")

MAX_BATCH = 2000
"""Events per call; a larger backlog goes out in several calls."""
BATCH_BYTES = framing.MAX_FRAME
"""Bytes of events per call; a single larger event goes alone."""
MAX_EVENT = framing.MAX_WIRE - 4096
"""The largest event that fits a frame with its call envelope; larger is a gap."""
BACKLOG_BYTES = 64 * 1024 * 1024
"""A client this far behind loses its backlog (as gaps) rather than our memory."""
PUSH_TIMEOUT = 60.0


def _resync(session: str) -> bytes:
    return sexp.dumps({"session": session, "kind": "resync"}).encode("utf-8")


class Outbox:
    """The events waiting for one connection, and the task that sends them."""

    def __init__(self, conn: Any, backlog_bytes: int = BACKLOG_BYTES) -> None:
        self.conn = conn
        self.backlog_bytes = backlog_bytes
        self._items: deque[tuple[int, str, bytes]] = deque()
        """(put serial, session, encoded event), oldest first."""
        self._bytes = 0
        self._seq: dict[str, int] = defaultdict(int)
        self._gaps: set[str] = set()
        self._wake = asyncio.Event()
        self._put = 0
        """Events put so far (a lost one counts: its gap is what the client sees)."""
        self._sent = 0
        """Of those, how many have been pushed (or failed to be): they go in order."""
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()
        """(puts it waits for, future), in put order: settled from the left."""
        self.task = asyncio.get_running_loop().create_task(self._run())

    @property
    def closed(self) -> bool:
        """True once the connection has ended."""
        return bool(self.conn.closed.is_set())

    def put(self, session: str, event: bytes | None) -> None:
        """Queue EVENT (a plist without ``:seq``, encoded); None marks it undeliverable."""
        self._put += 1
        if event is None or len(event) > MAX_EVENT:
            self._lose(session)
        else:
            self._items.append((self._put, session, event))
            self._bytes += len(event)
            if self._bytes > self.backlog_bytes:
                log.warning("event backlog over %d bytes: dropped, client will refetch",
                            self.backlog_bytes)
                for _, s, _ in self._items:
                    self._lose(s)
                self._items.clear()
                self._bytes = 0
        self._wake.set()

    def _lose(self, session: str) -> None:
        self._seq[session] += 1  # the number is used: the next event shows the gap
        self._gaps.add(session)

    def _number(self, session: str, event: bytes) -> bytes:
        self._seq[session] += 1
        return b"(:seq %d " % self._seq[session] + event[1:]

    def _next_batch(self) -> tuple[list[bytes], set[str], int]:
        """The next call's events, their sessions, and how many puts it settles."""
        batch = [self._number(s, _resync(s)) for s in sorted(self._gaps)]
        sessions = set(self._gaps)
        self._gaps.clear()
        size = sum(map(len, batch))
        settles = self._sent
        while self._items and len(batch) < MAX_BATCH:
            serial, session, event = self._items[0]
            if batch and size + len(event) > BATCH_BYTES:
                break
            self._items.popleft()
            self._bytes -= len(event)
            batch.append(self._number(session, event))
            sessions.add(session)
            size += len(event) + 1
            settles = serial
        # The last batch settles every put, the lost ones (sent as its resyncs) too.
        return batch, sessions, settles if self._items else self._put

    async def sent(self) -> None:
        """Return once every event put so far has been pushed, or failed or was lost."""
        if self._sent >= self._put or self.closed:
            return
        future = asyncio.get_running_loop().create_future()
        self._waiters.append((self._put, future))
        await future

    def _settle(self, upto: int) -> None:
        self._sent = max(self._sent, upto)
        while self._waiters and self._waiters[0][0] <= self._sent:
            future = self._waiters.popleft()[1]
            if not future.done():  # a reply that gave up waiting cancelled it
                future.set_result(None)

    async def _run(self) -> None:
        try:
            while not self.closed:
                await self._wake.wait()
                self._wake.clear()
                while (self._items or self._gaps) and not self.closed:
                    batch, sessions, settles = self._next_batch()
                    args = b"((" + b" ".join(batch) + b"))"
                    try:
                        await self.conn.call_encoded("tandem--events", args,
                                                     timeout=PUSH_TIMEOUT)
                    except Exception as e:  # slow, gone or failing: this client refetches
                        if self.closed:
                            return
                        log.warning("event push failed (%s): %s", type(e).__name__, e)
                        self._gaps.update(sessions)
                    self._settle(settles)
        finally:
            self._settle(self._put)  # gone: nobody waits on it any more
