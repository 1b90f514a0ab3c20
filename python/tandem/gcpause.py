"""Pause Python's cyclic garbage collector around bulk building of plain data.

Loading a journal or projecting it makes tens of thousands of dicts and
lists and no reference cycles; a collection set off in the middle only
re-scans everything already built, which made both several times slower.
Reference counting still frees everything as usual.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Run the body with the cyclic collector off (restored as it was after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
