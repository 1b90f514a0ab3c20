"""Which LLM a remote conversation's agent runs, and whether tandem's key goes with it.

The trust rule: an LLM key leaves this process for an
agent-server only when the user's own ``tandem-remote-hosts`` entry for that
host says ``:forward-keys``. Otherwise the host's server-side agent profile
runs, or the turn is refused naming the setting. A target whose host is not
in the pushed configuration (named by project settings, or pointing at
another URL than the user's entry) never receives a key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pydantic import BaseModel

from tandem.config.front_end import RemoteHost
from tandem.protocol.base import TandemError
from tandem.protocol.remote import LlmSettings, RemoteTarget
from tandem.providers import families
from tandem.providers.credentials import bound_credentials
from tandem.providers.registry import parse_provider
from tandem.remote.client import normalize_base_url


class AgentChoice(BaseModel):
    """What a new conversation's agent is: tandem's LLM (with its key) or a server profile."""

    llm: LlmSettings | None = None
    profile: str | None = None

    def body(self) -> dict[str, object]:
        """The part of ``POST /api/conversations`` that names the agent."""
        if self.profile is not None:
            return {"agent_profile_id": self.profile}
        assert self.llm is not None
        return {"agent_settings": {"llm": self.llm.wire()}}


def host_entry(target: RemoteTarget, hosts: Mapping[str, RemoteHost]) -> RemoteHost | None:
    """The user's entry for TARGET's host, only if it names the same server URL."""
    entry = hosts.get(target.host)
    if entry is None:
        return None
    try:
        same = normalize_base_url(entry.url) == target.url
    except TandemError:
        return None
    return entry if same else None


def choose_agent(
    provider: str,
    target: RemoteTarget,
    hosts: Mapping[str, RemoteHost],
    credentials: Mapping[str, Mapping[str, str]],
    settings_url: Callable[[str], str | None] = lambda _family: None,
    origin: Callable[[str], str] | None = None,
) -> AgentChoice:
    """The agent for a conversation of the session PROVIDER (``openai:M`` …) on TARGET.

    SETTINGS_URL gives a family's configured base URL; CREDENTIALS are what
    Emacs pushed (host-bound as for native turns). Raises ``no-credentials``
    naming ``tandem-remote-hosts`` when the key may not go and no profile is set.
    """
    spec = parse_provider(provider)
    entry = host_entry(target, hosts)
    if entry is not None and entry.forward_keys:
        if not families.is_family(spec.family):
            raise TandemError(
                "invalid", f"a remote turn needs a {families.provider_forms(acp=False)} "
                f"provider, not {provider}")
        # litellm names the family by its own prefix (the agent-server speaks litellm).
        row = families.get(spec.family)
        creds = bound_credentials(row.name, dict(credentials.get(row.name) or {}),
                                  settings_url(row.name), origin=origin)
        return AgentChoice(llm=LlmSettings(
            model=f"{row.litellm_prefix}/{spec.target}", base_url=creds.base_url,
            api_key=creds.api_key))
    if entry is not None and entry.agent_profile:
        return AgentChoice(profile=entry.agent_profile)
    where = (f"its entry in tandem-remote-hosts ({target.host})" if entry is not None
             else f"an entry for {target.host} at {target.url} in tandem-remote-hosts")
    raise TandemError(
        "no-credentials",
        f"Not sending an LLM key to the agent-server {target.host} ({target.url}): "
        f"set :forward-keys t in {where} to hand it your {spec.family} key, "
        "or :agent-profile to run one of the server's own agent profiles.")
