"""Byte bounds on an HTTP response body, applied while it is received.

A peer's reply (an MCP server's, an agent-server's) is untrusted input: it is
counted chunk by chunk and the read fails as soon as it goes past the bound,
so a huge body is never held whole. For an event stream the bound is per
event (the bytes since the last blank line), as such a stream may rightly
last a whole session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx


class CappedBody(httpx.AsyncByteStream):
    """INNER cut off past LIMIT bytes: the exception OVER returns is raised then."""

    def __init__(self, inner: httpx.AsyncByteStream, limit: int,
                 over: Callable[[], BaseException], events: bool = False) -> None:
        self.inner = inner
        self.limit = limit
        self.over = over
        self.events = events

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        tail = b""
        async for chunk in self.inner:
            if self.events:  # bytes since the last blank line (the end of an event)
                seen = tail + chunk
                cut = max(seen.rfind(b"\n\n"), seen.rfind(b"\r\n\r\n"))
                size = len(seen) - cut if cut >= 0 else size + len(chunk)
                tail = seen[-3:]
            else:
                size += len(chunk)
            if size > self.limit:
                raise self.over()
            yield chunk

    async def aclose(self) -> None:
        """Close the underlying stream."""
        await self.inner.aclose()


def cap(response: httpx.Response, limit: int, over: Callable[[], BaseException]) -> None:
    """Bound RESPONSE's body (each event, for an event stream) by LIMIT bytes."""
    events = response.headers.get("content-type", "").startswith("text/event-stream")
    assert isinstance(response.stream, httpx.AsyncByteStream)
    response.stream = CappedBody(response.stream, limit, over, events)
