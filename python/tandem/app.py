"""The backend's running state, handed to every method handler.

Each domain keeps its own registry here (open sessions, workspaces, remote
clients); the server creates one `App` per process. Domain code receives the
pieces it needs, not the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tandem.events import EventSink, NullSink
from tandem.paths import tandem_home


@dataclass
class App:
    """Process-wide state of one backend."""

    home: Path = field(default_factory=tandem_home)
    """The state root (``TANDEM_HOME``)."""
    events: EventSink = field(default_factory=NullSink)
    """Where domain code publishes events for Emacs."""
    services: dict[str, Any] = field(default_factory=dict)
    """Per-domain registries, keyed by domain name (``sessions``, ``remote``…)."""

    def service(self, name: str, factory: Any) -> Any:
        """Return the service NAME, creating it with FACTORY(self) on first use."""
        if name not in self.services:
            self.services[name] = factory(self)
        return self.services[name]
