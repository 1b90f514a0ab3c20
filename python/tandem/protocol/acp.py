"""Params of the ACP option methods (``acp/…``): an agent's modes and models."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tandem.protocol.base import Params, Reply

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


class AcpChoice(Reply):
    """One mode or model an agent offers."""

    id: str
    name: str


class OptionsReply(Reply):
    """What the agent offers for the root chat's ACP session, and what is chosen."""

    agent: str
    modes: list[AcpChoice] = Field(default_factory=list)
    mode: str | None = None
    """The mode the ACP session is in now."""
    models: list[AcpChoice] = Field(default_factory=list)
    model: str | None = None
    chosen: dict[str, str] = Field(default_factory=dict)
    """The user's choices for the session (kind → id)."""
