"""Method handlers called in-process, their replies as the JSON the wire carries.

A handler returns a reply model (`tandem.protocol`); a test that reads a
reply's fields by key reads ``plain(reply)``, the model's JSON dump (a
one-value ``RootModel`` dumps as that value), which is what Emacs receives
as a plist.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

from pydantic import BaseModel


def plain(reply: BaseModel | None) -> Any:
    """REPLY as the JSON the wire carries (None stays None)."""
    return None if reply is None else reply.model_dump(mode="json")


class Plain:
    """The handlers of MODULE, each returning its reply as `plain` makes it."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        handler = getattr(self._module, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return plain(await handler(*args, **kwargs))

        return call
