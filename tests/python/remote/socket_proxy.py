"""A TCP proxy in front of the agent-server that can cut its websocket connections.

Runs in a thread of its own (its own event loop), forwarding bytes both ways.
A connection whose first request line asks for ``/sockets/`` is a websocket;
`drop_sockets` closes every such connection from the client side and may
refuse new ones for a while (the network is down), while REST traffic goes on.
What reached the server is counted here: `socket_connects`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator


class SocketProxy:
    """Forwards 127.0.0.1:PORT to TARGET_PORT; ``url`` is what clients use."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.socket_connects = 0
        """Websocket connections that reached the server."""
        self.refused = 0
        """Websocket connections refused while the network was down."""
        self._down_until = 0.0
        self._down_for_ever = False
        self._sockets: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = await reader.read(65536)
        is_socket = b" /sockets/" in first.split(b"\r\n", 1)[0]
        if is_socket and (self._down_for_ever or time.monotonic() < self._down_until):
            self.refused += 1
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        if is_socket:
            self.socket_connects += 1
            self._sockets.add(writer)
        up_writer.write(first)

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(OSError):
                dst.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        self._sockets.discard(writer)

    def drop_sockets(self, down_for: float = 0.0, for_ever: bool = False) -> None:
        """Cut every websocket connection now; refuse new ones for DOWN_FOR seconds."""
        def cut() -> None:
            self._down_until = time.monotonic() + down_for
            self._down_for_ever = for_ever
            for w in list(self._sockets):
                transport = w.transport
                transport.abort()  # a reset, as a dead network gives, not a clean close
            self._sockets.clear()
        done = threading.Event()
        self._loop.call_soon_threadsafe(lambda: (cut(), done.set()))
        done.wait(5)

    @contextlib.contextmanager
    def running(self) -> Iterator[SocketProxy]:
        """Start the proxy; stop it on exit."""
        self._thread.start()
        self._ready.wait(10)
        try:
            yield self
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
