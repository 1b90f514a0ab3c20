"""Provider names (``openai:MODEL``, ``anthropic:MODEL``, ``acp:AGENT``) and building providers.

Settings keys read here (all optional)::

    {"default_provider": "anthropic:claude-sonnet-4-5",
     "openai":    {"base_url": "http://127.0.0.1:8080/v1"},
     "anthropic": {"base_url": "...", "thinking_budget": 0, "prompt_cache": true},
     "native":    {"max_retries": 3, "shell_timeout": 120, "output_cap": 65536},
     "acp_agents": {"claude": {"command": ["claude-code-acp"], "env": {}}}}

API keys are not read from settings: they come from the environment or are
passed explicitly (Emacs auth-source) through ``credentials``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, cast

from tandem.protocol.base import TandemError
from tandem.providers.anthropic import AnthropicWire
from tandem.providers.base import Provider
from tandem.providers.credentials import resolve_credentials
from tandem.providers.native import LoopLimits, NativeProvider
from tandem.providers.openai import OpenAIWire
from tandem.tools.permissions import SessionGrants

Family = Literal["openai", "anthropic", "acp"]
FAMILIES: tuple[Family, ...] = ("openai", "anthropic", "acp")


@dataclass(frozen=True)
class ProviderSpec:
    """A parsed provider name: FAMILY and TARGET (a model, or an ACP agent name)."""

    family: Family
    target: str

    @property
    def name(self) -> str:
        """The canonical ``family:target`` form."""
        return f"{self.family}:{self.target}"


def parse_provider(name: str) -> ProviderSpec:
    """Parse ``openai:MODEL``, ``anthropic:MODEL`` or ``acp:AGENT``; TandemError if malformed."""
    if not isinstance(name, str) or ":" not in name:
        raise TandemError(
            "invalid",
            f"provider {name!r} must look like openai:MODEL, anthropic:MODEL or acp:AGENT",
        )
    family, _, target = name.strip().partition(":")
    if family not in FAMILIES:
        raise TandemError(
            "invalid", f"unknown provider family {family!r} (use openai, anthropic or acp)"
        )
    if not target.strip() or any(c.isspace() for c in target):
        raise TandemError(
            "invalid", f"provider {name!r}: the part after ':' is empty or has spaces"
        )
    return ProviderSpec(cast(Family, family), target)


def _section(settings: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = settings.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TandemError("invalid", f"settings {key!r} must be a map")
    return value


def loop_limits(settings: Mapping[str, Any]) -> LoopLimits:
    """`LoopLimits` from the settings ``native`` section (unknown keys are an error)."""
    section = _section(settings, "native")
    known = {f.name: f.type for f in fields(LoopLimits)}
    values: dict[str, Any] = {}
    for key, value in section.items():
        if key not in known:
            raise TandemError("invalid", f"settings native.{key}: unknown key")
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise TandemError("invalid", f"settings native.{key}: expected a number >= 0")
        values[key] = int(value) if known[key] == "int" else float(value)
    try:
        return LoopLimits(**values)
    except ValueError as exc:
        raise TandemError("invalid", f"settings native: {exc}") from None


def build_provider(
    name: str,
    settings: Mapping[str, Any] | None = None,
    *,
    credentials: Mapping[str, Mapping[str, str]] | None = None,
    env: Mapping[str, str] | None = None,
    grants: SessionGrants | None = None,
    **acp_kwargs: Any,
) -> Provider:
    """Build the provider NAME.

    CREDENTIALS maps a family to ``{"api_key": …, "base_url": …}`` passed from
    Emacs; they win over the settings and ENV (default ``os.environ``). For
    ``acp:AGENT`` the agent must be in settings ``acp_agents``; ACP_KWARGS go to
    `tandem.providers.acp.AcpProvider` (``root_session_id`` …).
    """
    spec = parse_provider(name)
    settings = settings or {}
    if spec.family == "acp":
        agents = _section(settings, "acp_agents")
        if spec.target not in agents:
            known = ", ".join(sorted(agents)) or "none configured"
            raise TandemError("not-found", f"no ACP agent {spec.target!r} ({known})")
        agent = agents[spec.target]
        if not isinstance(agent, Mapping):
            raise TandemError("invalid", f"acp_agents.{spec.target} must be a map")
        from tandem.providers.acp import AcpProvider  # lazy: pulls in the acp package

        return cast(
            Provider,
            AcpProvider(
                spec.target,
                list(agent.get("command") or []),
                dict(agent.get("env") or {}),
                **acp_kwargs,
            ),
        )
    section = _section(settings, spec.family)
    given = dict((credentials or {}).get(spec.family) or {})
    creds = resolve_credentials(
        spec.family,
        api_key=given.get("api_key"),
        base_url=given.get("base_url") or section.get("base_url"),
        env=env,
    )
    limits = loop_limits(settings)
    if spec.family == "openai":
        wire: OpenAIWire | AnthropicWire = OpenAIWire(creds)
    else:
        budget = section.get("thinking_budget", 0)
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise TandemError("invalid", "settings anthropic.thinking_budget: expected an int >= 0")
        cache = section.get("prompt_cache", True)
        if not isinstance(cache, bool):
            raise TandemError("invalid", "settings anthropic.prompt_cache: expected true or false")
        wire = AnthropicWire(creds, thinking_budget=budget, prompt_cache=cache)
    return NativeProvider(spec.name, wire, limits=limits, grants=grants, default_model=spec.target)
