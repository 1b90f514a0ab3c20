"""A real `EventPusher` feeding one real `Connection` over a socket, read as a client would.

Shared by the event tests: publish some events, read the batches the client
receives (answering each call) until an event of a given kind arrives.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from tandem.protocol.events import AnyEvent
from tandem.protocol.sexp import Symbol
from tandem.server import framing
from tandem.server.connection import Connection
from tandem.server.pusher import EventPusher

Batches = list[list[dict[str, Any]]]


async def deliver(publish: list[AnyEvent | tuple[str, AnyEvent]],
                  until: str | Callable[[Batches], bool],
                  later: list[AnyEvent] | None = None,
                  steps: list[tuple[float, list[AnyEvent]]] | None = None,
                  ) -> tuple[Batches, float]:
    """Publish PUBLISH (then LATER, 0.1 s on); read batches until an event of kind UNTIL.

    An item of PUBLISH is an event of session "s" or a (SESSION, EVENT) pair.
    STEPS instead of LATER: each (SECONDS, EVENTS) is published SECONDS after
    the one before. UNTIL may also be a test of the batches read so far.
    Return (batches, seconds).
    """
    done = until if callable(until) else (
        lambda batches: any(e["kind"] == until for b in batches for e in b))
    pusher = EventPusher()
    conns: list[Connection] = []

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        conn = Connection(r, w, {}, None, "t")
        conns.append(conn)
        conn.authed = True
        pusher.attach(conn)
        await conn.serve()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**20)
    while not conns:
        await asyncio.sleep(0.01)
    started = time.monotonic()
    for item in publish:
        pusher.publish(*(item if isinstance(item, tuple) else ("s", item)))
    for seconds, events in ([(0.1, later)] if later else []) + (steps or []):
        await asyncio.sleep(seconds)
        for event in events:
            pusher.publish("s", event)
    batches: Batches = []
    while not done(batches):
        msg = await asyncio.wait_for(framing.read_frame(reader), 30)
        assert msg[0] == "call"
        batches.append(msg[3][0])
        writer.write(framing.encode_frame([Symbol("return"), msg[1], None]))
    elapsed = time.monotonic() - started
    writer.close()
    server.close()
    return batches, elapsed
