"""The transport's limits before and after ``hello`` (docs/security.md, Transport).

Before a peer has shown the token it may cost the backend almost nothing:
a small frame, a few seconds, one of a few slots. Tests shorten the
deadline through the environment; the defaults are what Emacs gets.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
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
    the slot of the oldest one, which is closed: a client that says ``hello``
    as soon as it connects (Emacs) always gets in, however many idle sockets
    another local process keeps open, while the backend still holds no more
    than the cap of them.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._waiting: dict[asyncio.WriteTransport, None] = {}  # insertion order: oldest first
        self.dropped = 0
        """Connections dropped so far to make room."""

    def admit(self, transport: asyncio.WriteTransport) -> int:
        """Take a slot for TRANSPORT, closing the oldest ones past the cap; return how many."""
        dropped = 0
        while len(self._waiting) >= self.cap:
            oldest = next(iter(self._waiting))
            del self._waiting[oldest]
            # abort, not close: nothing buffered is owed to a peer that never said hello
            oldest.abort()
            dropped += 1
        self.dropped += dropped
        self._waiting[transport] = None
        return dropped

    def release(self, transport: asyncio.WriteTransport) -> None:
        """Free TRANSPORT's slot (it said ``hello`` or went away); no-op if it has none."""
        self._waiting.pop(transport, None)

    def __len__(self) -> int:
        return len(self._waiting)

