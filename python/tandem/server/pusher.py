"""Event push: batch, coalesce and number events, then call Emacs with them.

Domain code calls `EventPusher.publish` (the `EventSink` protocol) from the
event loop. Events wait in a queue; one flusher sends them as a single call
``tandem--events`` with a list, at most every `INTERVAL` seconds, and never has
more than one batch in flight: while Emacs applies a batch, the next one
grows, and consecutive text deltas merge, so a token stream costs a handful of
calls a second rather than one per token.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any

log = logging.getLogger("tandem.events")

INTERVAL = 0.016
MAX_BATCH = 2000
"""Events per call; a larger backlog goes out in several calls."""


class EventPusher:
    """The server's `EventSink`: numbers events per session and pushes them."""

    def __init__(self) -> None:
        self.connections: list[Any] = []
        self._queue: list[dict[str, Any]] = []
        self._seq: dict[str, int] = defaultdict(int)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def attach(self, conn: Any) -> None:
        """Deliver events to CONN (an authenticated `Connection`) from now on."""
        self.connections.append(conn)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def publish(self, session: str, kind: str, payload: dict[str, Any]) -> None:
        """Queue one event; merged with the previous one when both are deltas."""
        if self._queue and kind == "delta":
            last = self._queue[-1]
            if (
                last["kind"] == "delta"
                and last["session"] == session
                and last.get("turn") == payload.get("turn")
                and last.get("stream") == payload.get("stream")
            ):
                last["text"] += payload.get("text", "")
                return
        event = {"session": session, "kind": kind}
        event.update(payload)
        self._queue.append(event)
        self._wake.set()

    def pending(self) -> int:
        """Number of events not yet sent."""
        return len(self._queue)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(INTERVAL)
            while self._queue:
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                for event in batch:
                    session = event["session"]
                    self._seq[session] += 1
                    event["seq"] = self._seq[session]
                self.connections = [c for c in self.connections if not c.closed.is_set()]
                for conn in self.connections:
                    try:
                        await conn.call("tandem--events", batch, timeout=60)
                    except Exception as e:  # a slow or gone Emacs must not stop the loop
                        log.warning("event push failed: %s", e)
