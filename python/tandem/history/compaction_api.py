"""Compaction methods for Emacs: compact now, cancel, how full the context is.

``sessions/compact`` runs one compaction to its end, ``sessions/compact-cancel``
cancels it (the session stays as it was), ``sessions/compaction-status`` says
how full the context is (see `tandem.history.compaction`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from tandem.history.compaction import CompactReply, StatusReply
from tandem.protocol.base import MethodSpec, Params

if TYPE_CHECKING:
    from tandem.app import App


class CompactParams(Params):
    """Compact ``session``; ``provider`` overrides the session's own (e.g. a cheaper model)."""

    session: str = Field(min_length=1)
    provider: str | None = None


class SessionOnlyParams(Params):
    """Just ``session``."""

    session: str = Field(min_length=1)


class StatusParams(Params):
    """How full ``session``'s context is for ``provider`` (default: the session's)."""

    session: str = Field(min_length=1)
    provider: str | None = None


async def compact_method(app: App, p: CompactParams) -> CompactReply:
    """Compact a session now."""
    return await app.compactions.compact(p.session, p.provider)


async def cancel_method(app: App, p: SessionOnlyParams) -> dict[str, bool]:
    """Cancel the compaction of a session; it ends leaving the session unchanged."""
    return {"cancelled": app.compactions.cancel(p.session)}


async def status_method(app: App, p: StatusParams) -> StatusReply:
    """The projected context size against the window and the threshold."""
    return app.compactions.status(p.session, p.provider)


METHODS: list[MethodSpec] = [
    MethodSpec(
        "sessions/compact",
        CompactParams,
        compact_method,
        "Summarise older chat turns into a compaction entry.",
        CompactReply,
    ),
    MethodSpec(
        "sessions/compact-cancel",
        SessionOnlyParams,
        cancel_method,
        "Cancel a running compaction (the session stays unchanged).",
    ),
    MethodSpec(
        "sessions/compaction-status",
        StatusParams,
        status_method,
        "Context size against the model's window and the threshold.",
        StatusReply,
    ),
]
