"""The per-host cache of agent-server home directories.

Concurrent callers for one host share a single in-flight lookup; a lookup
that fails is not remembered, so the next caller asks the server again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from tandem.remote.paths import normalize_home

HomeFetcher = Callable[[], Awaitable[str]]


class HomeCache:
    """Home directory per host key (a normalized base URL)."""

    def __init__(self) -> None:
        self._homes: dict[str, str] = {}
        self._inflight: dict[str, asyncio.Task[str]] = {}

    def cached(self, host: str) -> str | None:
        """The home remembered for HOST, or None; never starts a lookup."""
        return self._homes.get(host)

    def forget(self, host: str) -> None:
        """Drop what is remembered for HOST (an in-flight lookup still completes)."""
        self._homes.pop(host, None)

    def hosts(self) -> dict[str, str]:
        """A copy of every remembered host → home."""
        return dict(self._homes)

    async def get(self, host: str, fetch: HomeFetcher) -> str:
        """The home of HOST: remembered, joined in flight, or fetched now with FETCH.

        FETCH returns the raw home; it is validated and its trailing separators
        stripped before it is remembered.
        """
        if not host:
            raise ValueError("host key must not be empty")
        home = self._homes.get(host)
        if home is not None:
            return home
        task = self._inflight.get(host)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._load(host, fetch))
            # Retrieve the outcome even when every waiter was cancelled, so a
            # failure is not reported as "never retrieved".
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
            self._inflight[host] = task
        # shield: one waiter's cancellation must not cancel the others' lookup.
        return await asyncio.shield(task)

    async def _load(self, host: str, fetch: HomeFetcher) -> str:
        try:
            home = normalize_home(await fetch())
            self._homes[host] = home
            return home
        finally:
            self._inflight.pop(host, None)
