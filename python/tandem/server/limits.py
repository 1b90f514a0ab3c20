"""The transport's limits before and after ``hello`` (docs/security.md, Transport).

Before a peer has shown the token it may cost the backend almost nothing:
a small frame, a few seconds, one of a few slots. Tests shorten the
deadline through the environment; the defaults are what Emacs gets.
"""

from __future__ import annotations

import array
import asyncio
import fcntl
import os
import termios
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """What an unauthenticated peer may use."""

    hello_deadline: float = 10.0
    """Seconds from connecting to a successful ``hello``; then the socket is closed."""
    max_unauthenticated: int = 16
    """Connections waiting for ``hello`` at once; past it the oldest is closed (`WaitingSlots`)."""
    preauth_frame: int = 64 * 1024
    """Largest frame read before ``hello``, refused from its header."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Limits:
        """The defaults, with ``TANDEM_HELLO_DEADLINE`` and ``TANDEM_MAX_UNAUTHENTICATED``."""
        base = cls()
        try:
            deadline = float(env.get("TANDEM_HELLO_DEADLINE", base.hello_deadline))
            cap = int(env.get("TANDEM_MAX_UNAUTHENTICATED", base.max_unauthenticated))
        except ValueError:
            return base
        return cls(hello_deadline=max(0.1, deadline), max_unauthenticated=max(1, cap))


class WaitingSlots:
    """The connections that have not said ``hello`` yet, oldest first.

    When all `Limits.max_unauthenticated` slots are taken, a newcomer takes
    the slot of the oldest connection that has sent nothing yet (else of the
    oldest one), which is closed. A client that says ``hello`` as soon as it
    connects (Emacs) so always gets in, however many idle sockets another
    local process keeps open or keeps opening, while the backend holds no
    more than the cap of them.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._waiting: dict[asyncio.BaseTransport, bool] = {}
        """Transport → whether it has sent bytes; in arrival order, oldest first."""
        self.dropped = 0
        """Connections dropped so far to make room."""

    def admit(self, transport: asyncio.BaseTransport) -> int:
        """Take a slot for TRANSPORT, closing others past the cap; return how many."""
        dropped = 0
        while len(self._waiting) >= self.cap:
            victim = next((t for t, heard in self._waiting.items()
                           if not heard and not _bytes_waiting(t)), next(iter(self._waiting)))
            del self._waiting[victim]
            # abort, not close: nothing buffered is owed to a peer that never said hello
            if isinstance(victim, asyncio.WriteTransport):
                victim.abort()
            else:
                victim.close()
            dropped += 1
        self.dropped += dropped
        self._waiting[transport] = False
        return dropped

    def heard(self, transport: asyncio.BaseTransport) -> None:
        """TRANSPORT has sent its first bytes: drop silent ones before it."""
        if transport in self._waiting:
            self._waiting[transport] = True

    def release(self, transport: asyncio.BaseTransport) -> None:
        """Free TRANSPORT's slot (it said ``hello`` or went away); no-op if it has none."""
        self._waiting.pop(transport, None)

    def __len__(self) -> int:
        return len(self._waiting)


def _bytes_waiting(transport: asyncio.BaseTransport) -> bool:
    """Whether TRANSPORT's socket holds bytes not read yet (a hello sent before its accept).

    A burst of connections is accepted before any of them is read from, so
    the mark `WaitingSlots.heard` comes too late for a client that spoke at once.
    """
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    count = array.array("i", [0])
    try:
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, count)
    except OSError:
        return False
    return count[0] > 0


class HeardProtocol(asyncio.StreamReaderProtocol):
    """The stream protocol of `asyncio.start_server`, telling SLOTS when a peer first speaks."""

    def __init__(self, reader: asyncio.StreamReader,
                 on_client: Callable[[asyncio.StreamReader, asyncio.StreamWriter],
                                     Awaitable[None]],
                 slots: WaitingSlots) -> None:
        super().__init__(reader, on_client)
        self._slots = slots
        self._peer: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Remember TRANSPORT, then start the client as `start_server` does."""
        self._peer = transport
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        """Mark the peer heard from, then buffer DATA for the reader."""
        if self._peer is not None:
            self._slots.heard(self._peer)
        super().data_received(data)
