"""A call of a `sessions/…` handler on an `App` (the `app` fixture is the conftest's)."""

from __future__ import annotations

import asyncio
from typing import Any

from tandem.adapters import sessions as api
from tandem.app import App


def call(app: App, name: str, **params: Any) -> Any:
    """Run the handler of method NAME with PARAMS (validated as the server would)."""
    spec = next(m for m in api.METHODS if m.name == name)
    return asyncio.run(spec.handler(app, spec.params(**params)))


def plain_call(app: App, name: str, **params: Any) -> Any:
    """`call`, its reply as the JSON the wire carries (read by key, as Emacs reads a plist)."""
    return call(app, name, **params).model_dump(mode="json")
