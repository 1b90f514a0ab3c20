"""A bounded mapping for caches: least recently used entries go first.

Every cache the backend keeps for longer than one request is one of these
(no cache without a limit). Not thread-safe by itself: callers
that share one across threads hold their own lock, as before.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Generic, TypeVar, overload

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``limit`` entries; a read or a write makes an entry the newest."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"an LRU needs room for one entry: {limit!r}")
        self.limit = limit
        self._data: OrderedDict[K, V] = OrderedDict()

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: V) -> V: ...

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value of KEY (now the newest), else DEFAULT."""
        try:
            self._data.move_to_end(key)
        except KeyError:
            return default
        return self._data[key]

    def __getitem__(self, key: K) -> V:
        self._data.move_to_end(key)
        return self._data[key]

    def __setitem__(self, key: K, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.limit:
            self._data.popitem(last=False)

    def setdefault(self, key: K, value: V) -> V:
        """The value of KEY, storing VALUE first when there is none."""
        if key in self._data:
            return self[key]
        self[key] = value
        return value

    def pop(self, key: K, default: V | None = None) -> V | None:
        """Remove KEY; its value, else DEFAULT."""
        return self._data.pop(key, default)

    def clear(self) -> None:
        """Forget every entry."""
        self._data.clear()

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._data))
