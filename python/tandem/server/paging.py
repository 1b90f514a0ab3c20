"""Paging of large replies, so that no frame comes near the 16 MiB EPC limit.

A reply whose encoding exceeds `MAX_FRAME` is kept here as text and answered
with a marker ``(:tandem-paged HANDLE :chars N :pages K)``; the client fetches
each page with the ``page`` method, joins them and reads the whole. Pages are
cut by characters so each is a valid string, and sized so that even a page of
four-byte characters with every one escaped fits in one frame.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

PAGE_CHARS = 512 * 1024
"""Characters per page: ≤ 2 MiB of UTF-8 even before escaping doubles some."""
MAX_HELD = 8
"""Large replies held per connection; the oldest is dropped past this."""


@dataclass
class PageStore:
    """The large replies of one connection, waiting to be fetched."""

    held: dict[str, str] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def hold(self, text: str) -> dict[str, object]:
        """Keep TEXT and return the marker that replaces it in the reply."""
        handle = f"p{next(self._ids)}"
        self.held[handle] = text
        while len(self.held) > MAX_HELD:
            del self.held[next(iter(self.held))]
        pages = max(1, -(-len(text) // PAGE_CHARS))
        return {"tandem_paged": handle, "chars": len(text), "pages": pages}

    def page(self, handle: str, index: int) -> str:
        """Return page INDEX of HANDLE; the last page releases the text."""
        text = self.held.get(handle)
        if text is None:
            raise KeyError(handle)
        pages = max(1, -(-len(text) // PAGE_CHARS))
        if not 0 <= index < pages:
            raise IndexError(index)
        chunk = text[index * PAGE_CHARS : (index + 1) * PAGE_CHARS]
        if index == pages - 1:
            del self.held[handle]
        return chunk
