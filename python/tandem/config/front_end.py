"""What a front end configures for a backend, in memory only (never written anywhere).

`ClientConfig` is what ``turns/configure`` receives: the ACP agents (from
``tandem-acp-agents``), credentials (auth-source), the default provider and
permission mode. Its `overlay` part is the settings layer the sessions side
puts on top of the user's and the project's files; the credentials stay with
the turn service, which builds providers.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, Field

from tandem.config.model import PermissionMode


class FrontEndSettings(BaseModel):
    """The front end's settings layer: trusted, on top of the files."""

    acp_agents: dict[str, dict[str, Any]] = Field(default_factory=dict)
    default_provider: str | None = None
    permission_mode: PermissionMode | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    """From Emacs customization, already validated against the settings model."""

    def layer(self) -> dict[str, Any]:
        """The keys this layer sets, as a settings overlay."""
        out: dict[str, Any] = copy.deepcopy(self.settings)
        if self.acp_agents:
            out["acp_agents"] = self.acp_agents
        if self.default_provider:
            out["default_provider"] = self.default_provider
        return out


class ClientConfig(FrontEndSettings):
    """Everything a front end configures: its settings layer plus credentials."""

    credentials: dict[str, dict[str, str]] = Field(default_factory=dict)
