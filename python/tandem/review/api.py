"""Review methods for Emacs: revert a hunk or a file of a turn, a file before the turn.

``review/revert`` reverts hunk ``hunk`` (0-based, among the file's hunks in
the turn's patch; nil: the whole file) of ``path`` in ``turn`` against the
files now, and returns the ``revert`` entry it journaled. ``review/before``
returns a file's text as it was before the turn (for ediff).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from tandem.checkpoints.reverting import change_of, entry_in
from tandem.protocol.base import MethodSpec, Params, Reply, TandemError
from tandem.review.revert import revert, turn_checkpoints
from tandem.turns.engine import run_blocking

if TYPE_CHECKING:
    from tandem.app import App

_MAX_TEXT = 8 * 1024 * 1024


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


async def revert_method(app: App, p: RevertParams) -> dict[str, Any]:
    """Handler of ``review/revert``."""
    return await revert(app, p.session, p.turn, p.path, p.hunk, p.hunk_header)


def _before(cp: Any, base: str, end: str, path: str) -> Before:
    change = change_of(cp, cp.get(base).tree, cp.get(end).tree, path)
    old = change.old_path or path
    entry = entry_in(cp.git, cp.get(base).tree, old)
    if entry is None:
        return Before(root=str(cp.root), path=old, exists=False, text="")
    data = b"".join(blob for _, blob in cp.git.blobs([entry[1]]))
    if b"\0" in data[:8192] or len(data) > _MAX_TEXT:
        raise TandemError("invalid", f"{old} is binary or too large to compare as text")
    return Before(root=str(cp.root), path=old, exists=True,
                  text=data.decode("utf-8", "replace"))


async def before(app: App, p: BeforeParams) -> Before:
    """Handler of ``review/before``."""
    journal = app.sessions.journal(p.session)
    base, end = turn_checkpoints(app.sessions.entries(journal), p.turn)
    cp = app.checkpoints.for_root(app.rewinds.checkpoint_root(journal))
    result: Before = await run_blocking(_before, cp, base, end, p.path)
    return result


METHODS: list[MethodSpec] = [
    MethodSpec("review/revert", RevertParams, revert_method,
               "Revert one hunk or one file of a turn against the files now (journaled)."),
    MethodSpec("review/before", BeforeParams, before,
               "A file's text as it was before a turn.", Before),
]
