"""The peer a method runs for: what a handler may ask of its connection.

The server's `Connection` sets `CURRENT` before it runs a handler; the core
adapters (``hello``, ``page``, ``debug/call-emacs``) read it through this
protocol, so the adapter layer never imports the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Protocol


class Pages(Protocol):
    """The large replies a connection holds, fetched page by page."""

    def page(self, handle: str, index: int) -> str:
        """Page INDEX of HANDLE (KeyError: no such handle; IndexError: no such page)."""
        ...


class Peer(Protocol):
    """The connection a call arrived on."""

    @property
    def methods(self) -> Mapping[str, Any]:
        """The method table this connection answers."""
        ...

    @property
    def pages(self) -> Pages:
        """Its held large replies."""
        ...

    async def call(self, method: str, *args: Any, timeout: float | None = 30.0) -> Any:
        """Call METHOD in Emacs with ARGS and return its value."""
        ...


CURRENT: ContextVar[Peer] = ContextVar("tandem_connection")
"""The peer of the call being handled (set by the server for each call)."""
