"""A real `EventPusher` feeding one real `Connection` over a socket, read as a client would.

Shared by the event tests: publish some events, read the batches the client
receives (answering each call) until an event of a given kind arrives.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tandem.protocol.events import AnyEvent
from tandem.protocol.sexp import Symbol
from tandem.server import framing
from tandem.server.connection import Connection
from tandem.server.pusher import EventPusher


async def deliver(publish: list[AnyEvent | tuple[str, AnyEvent]], until: str,
                  later: list[AnyEvent] | None = None,
                  ) -> tuple[list[list[dict[str, Any]]], float]:
    """Publish PUBLISH (then LATER, 0.1 s on); read batches until an event of kind UNTIL.

    An item of PUBLISH is an event of session "s" or a (SESSION, EVENT) pair.
    Return (batches, seconds).
    """
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
    if later:
        await asyncio.sleep(0.1)  # the distributor is waiting for more deltas now
        for event in later:
            pusher.publish("s", event)
    batches: list[list[dict[str, Any]]] = []
    while not any(e["kind"] == until for b in batches for e in b):
        msg = await asyncio.wait_for(framing.read_frame(reader), 30)
        assert msg[0] == "call"
        batches.append(msg[3][0])
        writer.write(framing.encode_frame([Symbol("return"), msg[1], None]))
    elapsed = time.monotonic() - started
    writer.close()
    server.close()
    return batches, elapsed
