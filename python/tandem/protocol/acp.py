"""Params of the ACP option methods (``acp/…``): an agent's modes and models."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tandem.protocol.base import Params

SessionId = Field(min_length=1, max_length=100)


class OptionsParams(Params):
    """Ask what the session's ACP agent offers (PROVIDER: default from settings)."""

    session: str = SessionId
    provider: str | None = None
    """``acp:AGENT``; without it the session's default provider, which must be ACP."""


class ChooseParams(Params):
    """Choose the session's agent mode or model (recorded in the journal)."""

    session: str = SessionId
    kind: Literal["mode", "model"]
    value: str = Field(min_length=1, max_length=200)
    provider: str | None = None
