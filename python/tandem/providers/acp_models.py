"""Configuration and reports of the ACP provider (pydantic: they cross boundaries)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SessionHow = Literal["new", "load", "resume", "seeded"]
"""How a root chat's ACP session was established (journal ``acp_session.how``)."""


class AcpAgentConfig(BaseModel):
    """One configured agent (settings ``acp_agents``, Emacs ``tandem-acp-agents``)."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    project_config_files: list[str] = Field(default_factory=list)
    """Project files that configure the agent (see `tandem.config.agent_files`)."""

    @field_validator("command")
    @classmethod
    def _words(cls, value: list[str]) -> list[str]:
        if any(not word for word in value):
            raise ValueError("command words must be non-empty strings")
        return value


class AcpSessionInfo(BaseModel):
    """How the root chat's ACP conversation was established during a turn."""

    acp_session_id: str
    how: SessionHow
