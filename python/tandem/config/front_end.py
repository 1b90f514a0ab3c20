"""What a front end configures for a backend, in memory only (never written anywhere).

`ClientConfig` is what ``turns/configure`` receives: the ACP agents (from
``tandem-acp-agents``), credentials (auth-source), the agent-servers of
``tandem-remote-hosts``, the default provider and permission mode. Its
`overlay` part is the settings layer the sessions side puts on top of the
user's and the project's files; the credentials and hosts stay with the turn
service, which builds providers.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from tandem.config.model import PermissionMode


class FrontEndSettings(BaseModel):
    """The front end's settings layer: trusted, on top of the files."""

    acp_agents: dict[str, dict[str, Any]] = Field(default_factory=dict)
    default_provider: str | None = None
    permission_mode: PermissionMode | None = None
    settings: dict[str, object] = Field(default_factory=dict)
    """From Emacs customization, already validated against the settings model."""

    def layer(self) -> dict[str, object]:
        """The keys this layer sets, as a settings overlay."""
        out: dict[str, object] = copy.deepcopy(self.settings)
        if self.acp_agents:
            out["acp_agents"] = self.acp_agents
        if self.default_provider:
            out["default_provider"] = self.default_provider
        return out


class RemoteHost(BaseModel):
    """One entry of ``tandem-remote-hosts``: the user's own word about an agent-server.

    Only these entries may make tandem hand an LLM key to a server
    (FORWARD_KEYS); a host named elsewhere (project settings) never gets one.
    """

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1)
    forward_keys: bool = False
    """Send the session's LLM key to this server's agent (``:forward-keys``)."""
    agent_profile: str | None = None
    """A server-side agent profile to run instead (``agent_profile_id``)."""
    api_key: SecretStr | None = None
    """The server's session API key (auth-source), for the turns run there."""


class ClientConfig(FrontEndSettings):
    """Everything a front end configures: its settings layer plus credentials."""

    credentials: dict[str, dict[str, str]] = Field(default_factory=dict)
    remote_hosts: dict[str, RemoteHost] = Field(default_factory=dict)
    """The user's agent-servers by name (``tandem-remote-hosts``)."""


class FrontEnd:
    """The front end's latest configuration, one object shared by the services that read it.

    The composition root makes one and hands it to the sessions side (its settings
    layer) and the turn service (credentials, agents), which replaces it on
    ``turns/configure``: both see the same configuration, and neither assigns the
    other's attributes.
    """

    def __init__(self) -> None:
        self._config = ClientConfig()

    @property
    def config(self) -> ClientConfig:
        """The configuration the front end sent last (empty before the first)."""
        return self._config

    def replace(self, config: ClientConfig) -> None:
        """Take CONFIG as the front end's configuration from now on."""
        self._config = config
