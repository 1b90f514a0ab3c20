"""Review methods (``review/…``): revert a hunk or a file of a turn, a file before the turn.

``review/revert`` reverts hunk ``hunk`` (0-based, among the file's hunks in
the turn's patch; nil: the whole file) of ``path`` in ``turn`` against the
files now, and returns the ``revert`` entry it journaled. ``review/before``
returns a file's text as it was before the turn (for ediff).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.protocol.base import MethodSpec
from tandem.protocol.review import Before, BeforeParams, RevertParams
from tandem.protocol.sessions import WrittenEntry
from tandem.review.before import before as text_before

if TYPE_CHECKING:
    from tandem.app import App


async def revert(app: App, p: RevertParams) -> WrittenEntry:
    """Handler of ``review/revert``."""
    return await app.review.revert(p.session, p.turn, p.path, p.hunk, p.hunk_header)


async def before(app: App, p: BeforeParams) -> Before:
    """Handler of ``review/before``."""
    return await text_before(app.sessions, app.checkpoints, app.rewinds.checkpoint_root,
                             p.session, p.turn, p.path)


METHODS: list[MethodSpec] = [
    MethodSpec("review/revert", RevertParams, revert,
               "Revert one hunk or one file of a turn against the files now (journaled)."),
    MethodSpec("review/before", BeforeParams, before,
               "A file's text as it was before a turn.", Before),
]
