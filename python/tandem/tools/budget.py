"""Blocking tool work off the event loop, inside a time budget.

Walks, reads and matching run in a worker thread, so the backend keeps
answering (``ping``, cancel, other clients) whatever a call costs. The work
checks its `Deadline` as it goes and stops with a clear error; if it is stuck
in a system call, the caller stops waiting after a short grace and the
thread is abandoned (it holds no lock and writes nothing the caller reads).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from tandem.tools.base import ToolContext, ToolError

T = TypeVar("T")

GRACE = 2.0
"""Seconds past the budget the caller waits for work that does not check in."""

_LIMITER: anyio.CapacityLimiter | None = None


def _limiter() -> anyio.CapacityLimiter:
    # Created lazily: a CapacityLimiter belongs to the running event loop.
    global _LIMITER
    if _LIMITER is None:
        _LIMITER = anyio.CapacityLimiter(8)
    return _LIMITER


class Deadline:
    """The moment a tool call's budget runs out; `check` raises once it has."""

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds = seconds
        self.what = what
        self.at = time.monotonic() + seconds

    def expired(self) -> bool:
        """Whether the budget is spent."""
        return time.monotonic() > self.at

    def check(self) -> None:
        """Raise `ToolError` when the budget is spent."""
        if self.expired():
            raise self.error()

    def error(self) -> ToolError:
        """The error a call over its budget reports."""
        return ToolError(
            f"{self.what} stopped: it ran over its time budget of {self.seconds:g} s; "
            "narrow the path, glob or pattern"
        )


async def run_blocking(ctx: ToolContext, what: str, fn: Callable[[Deadline], T]) -> T:
    """Run FN(deadline) in a worker thread within CTX's tool time budget."""
    deadline = Deadline(ctx.tool_timeout, what)
    with anyio.move_on_after(ctx.tool_timeout + GRACE):
        return await anyio.to_thread.run_sync(
            fn, deadline, abandon_on_cancel=True, limiter=_limiter()
        )
    raise deadline.error()
