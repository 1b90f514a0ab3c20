"""The event sink: how domain code tells Emacs that something happened.

Domain packages publish a typed event (`tandem.protocol.events`) through
this protocol; the server implements it by batching events into EPC calls.
Domain code never sees EPC.
"""

from __future__ import annotations

from typing import Any, Protocol

from tandem.protocol.events import AnyEvent, kind_of, payload


class EventSink(Protocol):
    """Receiver of session events (see docs/architecture.md, Events)."""

    def publish(self, session: str, event: AnyEvent) -> None:
        """Queue EVENT for SESSION; the sink numbers it."""


class NullSink:
    """A sink that drops everything: for the CLI and for tests that need none."""

    def publish(self, session: str, event: AnyEvent) -> None:
        """Drop EVENT."""
        return None


class RecordingSink:
    """A sink that keeps every event in order: for tests and headless runs.

    Each is kept as ``(session, kind, payload)``, the payload as the plain
    data the server would send.
    """

    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def publish(self, session: str, event: AnyEvent) -> None:
        """Keep EVENT."""
        self.events.append((session, kind_of(event), payload(event)))
