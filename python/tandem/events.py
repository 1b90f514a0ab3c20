"""The event sink: how domain code tells Emacs that something happened.

Domain packages publish through this protocol; the server implements it by
batching events into EPC calls. Domain code never sees EPC.
"""

from __future__ import annotations

from typing import Any, Protocol


class EventSink(Protocol):
    """Receiver of session events (see docs/architecture.md, Events)."""

    def publish(self, session: str, kind: str, payload: dict[str, Any]) -> None:
        """Queue one event of KIND for SESSION; the sink numbers it."""


class NullSink:
    """A sink that drops everything: for the CLI and for tests that need none."""

    def publish(self, session: str, kind: str, payload: dict[str, Any]) -> None:
        return None


class RecordingSink:
    """A sink that keeps every event in order: for tests and headless runs."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def publish(self, session: str, kind: str, payload: dict[str, Any]) -> None:
        self.events.append((session, kind, dict(payload)))
