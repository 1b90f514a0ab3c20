"""A value built on first use, which can tell whether it has been built yet."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Once(Generic[T]):
    """FACTORY's value, built by the first `get` and kept."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._value: T | None = None
        self._built = False

    def get(self) -> T:
        """The value (built now if it was not yet)."""
        if not self._built:
            self._value = self._factory()
            self._built = True
        return self._value  # type: ignore[return-value]  # built above

    @property
    def built(self) -> bool:
        """Whether `get` has built the value."""
        return self._built
