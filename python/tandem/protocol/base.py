"""Building blocks of the protocol: the base params model and method specs.

A method is a name, a params model and an async handler ``handler(app,
params) -> reply``. The reply is a pydantic model, a dict, a list, a string,
a number or None. Domain packages declare their methods in an ``api`` module
as ``METHODS: list[MethodSpec]``; the server's method table collects them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict


class Params(BaseModel):
    """Base of every params model: unknown keys are an error, not ignored."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Reply(BaseModel):
    """Base of every reply model."""

    model_config = ConfigDict(extra="forbid")


Handler = Callable[[Any, Any], Awaitable[Any]]


@dataclass(frozen=True)
class MethodSpec:
    """One callable method: NAME, its PARAMS model, its HANDLER, a one-line DOC."""

    name: str
    params: type[Params]
    handler: Handler
    doc: str
    reply: type[BaseModel] | None = None


class TandemError(Exception):
    """An error a handler raises on purpose: it reaches Emacs as ``tandem-error``.

    CODE is a short stable symbol-like string (``not-found``, ``invalid``,
    ``busy``…); MESSAGE is for the user; DATA is optional detail.
    """

    def __init__(self, code: str, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
