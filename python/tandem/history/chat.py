"""A chat turn as Emacs sends it: the session's choices, automatic compaction, the engine.

It sits above the turn engine because compaction does: when the projected
context passes the threshold the session is compacted first (a failed
automatic compaction is logged and the turn goes ahead).
"""

from __future__ import annotations

import anyio.to_thread

from tandem.history.compaction import CompactionService
from tandem.protocol.turns import Accepted, ImageInput
from tandem.providers.base import PermissionMode
from tandem.turns.images import read_attachments
from tandem.turns.requests import chat_spec
from tandem.turns.service import TurnService


async def send(turns: TurnService, compactions: CompactionService, session: str, text: str,
               provider: str | None, model: str | None,
               permission_mode: PermissionMode | None,
               images: list[ImageInput] | None = None) -> Accepted:
    """Accept TEXT (with IMAGES) as the next chat turn of SESSION and start it; its identity.

    The images are read and checked first: a bad one refuses the request before
    anything else happens (no compaction, no entry)."""
    spec = chat_spec(turns.sessions, session, text, provider, model, permission_mode)
    if images:
        sessions = turns.sessions
        root = sessions.root_of(sessions.journal(spec.session))
        settings = sessions.settings(root)
        spec.images = await anyio.to_thread.run_sync(
            lambda: read_attachments(images, root, settings))
        await turns.engine.check_images(spec)  # before a compaction sends anything
    await compactions.maybe_compact(spec.session, provider=spec.provider, text=text)
    turn = await turns.engine.accept(spec)
    return Accepted(session=spec.session, turn=turn)
