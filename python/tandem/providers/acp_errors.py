"""Small pieces of the ACP provider: its internal errors and task helpers."""

from __future__ import annotations

import asyncio
from typing import Any

from tandem.protocol.base import TandemError


def _exception(future: asyncio.Future[Any]) -> BaseException | None:
    return None if future.cancelled() else future.exception()


def _uncancel() -> None:
    """A cancelled turn ends as a result, not an exception: clear the request."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def _checked_id(acp_session_id: str | None) -> str | None:
    if acp_session_id is not None and (
        not isinstance(acp_session_id, str) or not acp_session_id.strip()
    ):
        raise TandemError("invalid", f"not an ACP session id: {acp_session_id!r}")
    return acp_session_id


class _AgentDied(Exception):
    """The agent process exited while tandem waited for it."""


class _StartError(Exception):
    """The agent could not be started or spoke an unknown protocol."""
