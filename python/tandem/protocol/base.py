"""Building blocks of the protocol: the base params model and method specs.

A method is a name, a params model and an async handler ``handler(app,
params) -> reply``. The reply is a pydantic model of `tandem.protocol` (its
return annotation says which; a reply that is one value is a ``RootModel``,
sent as that value). Each method namespace has one module in `tandem.adapters`
declaring ``METHODS: list[MethodSpec]``; the server's method table collects
them. Every params and reply model lives in `tandem.protocol`, one module
per namespace.
`TandemError` (defined with the error codes in `tandem.protocol.errors`) is
imported from here by every raise site.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator

# Re-exported: every raise site imports it from here.
from tandem.protocol.errors import TandemError as TandemError


class Vector(tuple[Any, ...]):
    """A value sent to Emacs as a vector ``[A B C]``: a positional record read as one object.

    A plist of N fields costs Emacs 2N conses to read (and to collect); a
    vector of N is one object. Used where a reply holds thousands of records.
    """

    __slots__ = ()


class Printed(str):
    """Text already printed as an S-expression, sent as it is (a part of a reply kept printed).

    A long history's rows are printed once and kept (`tandem.sessions.history`);
    a reply made of them is a join of their text, not a print of each.
    """

    __slots__ = ()


QUEUE_TEXT_MAX = 1_000_000
"""Characters of one queued message: as a sent one (``turns/send``). Here, not in
`tandem.protocol.turns`, so that the queue's fold, which every turn loads, does not
build that module's models (start-up of ``tandem ask``)."""


class Params(BaseModel):
    """Base of every params model: unknown keys are an error, not ignored.

    Emacs has one value, nil, for false, the empty list and nothing; so a
    nil arriving for a boolean field means false, and for a field with a
    default (an empty list, an empty map, None) it means that default.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _nil(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = {}
        for key, value in data.items():
            field = cls.model_fields.get(key)
            if value is None and field is not None:
                if field.annotation is bool:
                    value = False
                elif not field.is_required():
                    continue
            out[key] = value
        return out


class Reply(BaseModel):
    """Base of every reply model."""

    model_config = ConfigDict(extra="forbid")


class Verbatim(Reply):
    """Base of a reply whose fields the codec prints as they are, not as ``model_dump`` makes them.

    For a reply carrying a `Printed` or a `Vector` (a history page): dumping
    to JSON would make the one a quoted string and the other a list.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


# Replies that are one value, not a plist: the codec prints their root as it
# is (`tandem.protocol.sexp`), so the wire carries that value alone.

class Nothing(RootModel[None]):
    """The reply of a method that answers nothing (nil): it did what was asked."""

    root: None = None


class Text(RootModel[str]):
    """A reply that is one string."""


class Count(RootModel[int]):
    """A reply that is one integer."""


class Number(RootModel[float]):
    """A reply that is one number."""


class Flag(RootModel[bool]):
    """A reply that is t or nil."""


class Names(RootModel[list[str]]):
    """A reply that is a list of strings."""


class Value(RootModel[Any]):
    """A reply that is whatever value the method was given or got (diagnostics only)."""


Handler = Callable[[Any, Any], Awaitable[Any]]


@dataclass(frozen=True)
class MethodSpec:
    """One callable method: NAME, its PARAMS model, its HANDLER, a one-line DOC."""

    name: str
    params: type[Params]
    handler: Handler
    doc: str
    reply: type[BaseModel] | None = None
    after_events: bool = False
    """The reply goes out only after the events published before it have reached
    the caller: a reply that says a turn ended never overtakes that turn's events."""


class TurnStatus(Reply):
    """Where a turn stands (``turns/status``; here, not in `protocol.turns`, because the
    turn engine builds it and a plain ``tandem ask`` loads none of the turn methods' models)."""

    state: Literal["running", "ended"]
    turn: int
    waiting: bool = False
    outcome: Literal["succeeded", "failed", "aborted"] | None = None
    error: str | None = None
    files_changed: list[str] = Field(default_factory=list)
