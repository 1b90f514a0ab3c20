"""Params and replies of the review methods (``review/…``): revert a hunk, a file before a turn."""

from __future__ import annotations

from pydantic import Field

from tandem.protocol.base import Params, Reply


class RevertParams(Params):
    """``review/revert``: revert ``hunk`` (nil: all) of ``path`` in ``turn`` of ``session``."""

    session: str = Field(min_length=1)
    turn: int = Field(ge=1)
    path: str = Field(min_length=1, max_length=4096)
    hunk: int | None = Field(default=None, ge=0)
    hunk_header: str | None = Field(default=None, max_length=4096)
    """The ``@@ … @@`` line the user saw; a different hunk there is refused (``stale``)."""


class BeforeParams(Params):
    """``review/before``: ``path`` (its name after the turn) as it was before ``turn``."""

    session: str = Field(min_length=1)
    turn: int = Field(ge=1)
    path: str = Field(min_length=1, max_length=4096)


class Before(Reply):
    """A file's text before a turn."""

    root: str
    path: str
    """The name it had before the turn (differs for a renamed file)."""
    exists: bool
    """False when the turn created it (``text`` is empty)."""
    text: str
