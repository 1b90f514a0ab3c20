"""Provider names (``FAMILY:MODEL`` of a `tandem.providers.families` row, ``acp:AGENT``).

And building providers from them.

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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tandem.config.model import SettingsModel, validate
from tandem.protocol.base import TandemError
from tandem.providers import families
from tandem.providers.base import Provider, ToolSource
from tandem.providers.credentials import bound_credentials
from tandem.providers.native import LoopLimits, NativeProvider
from tandem.tools.permissions import SessionGrants

if TYPE_CHECKING:
    from tandem.editor import EditorBridge
    from tandem.providers.acp_workspace import ProjectTrusted

ACP = "acp"
"""The pseudo-family of ACP agents (``acp:AGENT``): a program, not a wire format."""


@dataclass(frozen=True)
class ProviderSpec:
    """A parsed provider name: FAMILY and TARGET (a model, or an ACP agent name)."""

    family: str
    """A registered API family's name, or ``acp``."""
    target: str

    @property
    def name(self) -> str:
        """The canonical ``family:target`` form."""
        return f"{self.family}:{self.target}"


@dataclass(frozen=True)
class AgentContext:
    """What a session gives the provider built for it, beyond settings and credentials.

    Built by the caller (the turn service, per session); each provider takes
    only what it uses: an ACP agent the editor, its last choices, the MCP
    servers and the trust question, a native loop the MCP tools.
    """

    editor: EditorBridge | None = None
    """The buffers open in Emacs, which an agent process reads through tandem."""
    choices: Mapping[str, str] = field(default_factory=dict)
    """The mode and model last chosen for this agent (option kind → value)."""
    mcp_servers: Callable[[], list[Any]] | None = None
    """The session's MCP servers in ACP's shape, asked at each ACP session."""
    project_trusted: ProjectTrusted | None = None
    """Whether a root's project settings are trusted, asked at each ACP session."""
    tool_source: ToolSource | None = None
    """More tools per turn for a native loop (the session's MCP tools)."""
    editor_tools: Callable[[Path], list[Any]] | None = None
    """The editor tools' MCP server entries for an agent process in a root (ACP's shape)."""


def parse_provider(name: str) -> ProviderSpec:
    """Parse ``FAMILY:MODEL`` or ``acp:AGENT``; TandemError if malformed."""
    if not isinstance(name, str) or ":" not in name:
        raise TandemError(
            "invalid", f"provider {name!r} must look like {families.provider_forms()}")
    family, _, target = name.strip().partition(":")
    if family != ACP and not families.is_family(family):
        known = families.names()
        raise TandemError(
            "invalid", f"unknown provider family {family!r} (use {', '.join(known)} or acp)"
        )
    if not target.strip() or any(c.isspace() for c in target):
        raise TandemError(
            "invalid", f"provider {name!r}: the part after ':' is empty or has spaces"
        )
    return ProviderSpec(family, target)


def typed_settings(settings: Mapping[str, Any] | SettingsModel | None) -> SettingsModel:
    """SETTINGS as the typed model (a mapping is validated; errors name the key)."""
    if isinstance(settings, SettingsModel):
        return settings
    return validate(dict(settings or {}), "settings")


def loop_limits(settings: Mapping[str, Any] | SettingsModel) -> LoopLimits:
    """`LoopLimits` from the settings ``native`` section."""
    native = typed_settings(settings).native
    try:
        return LoopLimits(**(native.model_dump() if native else {}))
    except ValueError as exc:
        raise TandemError("invalid", f"settings native: {exc}") from None


def section_of(settings: Mapping[str, Any] | SettingsModel | None, family: str) -> Any:
    """FAMILY's settings section in SETTINGS, or None (unset, or a family without one)."""
    row = families.get(family)
    return getattr(typed_settings(settings), row.name, None) if row.settings else None


def keeps_conversation(name: str) -> bool:
    """Whether provider NAME keeps the root chat's conversation itself (an agent).

    False for a name that does not parse: nothing of it runs to keep one.
    """
    try:
        return parse_provider(name).family == ACP
    except TandemError:
        return False


def build_provider(
    name: str,
    settings: Mapping[str, Any] | SettingsModel | None = None,
    *,
    credentials: Mapping[str, Mapping[str, str]] | None = None,
    env: Mapping[str, str] | None = None,
    grants: SessionGrants | None = None,
    origin: Callable[[str], str] | None = None,
    conversation_id: str | None = None,
    agent: AgentContext | None = None,
) -> Provider:
    """Build the provider NAME.

    SETTINGS are the effective (already trust-filtered) settings. CREDENTIALS
    maps a family to ``{"api_key": …, "host": …, "base_url": …}`` passed from
    Emacs; they win over the settings and ENV (default ``os.environ``), and a
    key bound to a host is sent nowhere else (see `bound_credentials`; ORIGIN
    names the file a setting came from, for its error). For
    ``acp:AGENT`` the agent must be in settings ``acp_agents``.
    CONVERSATION_ID is the root chat's conversation an agent continues (native
    providers keep none); AGENT is what the session gives the provider (see
    `AgentContext`; none by default).
    """
    context = agent or AgentContext()
    spec = parse_provider(name)
    typed = typed_settings(settings)
    if spec.family == ACP:
        agents = typed.acp_agents or {}
        if spec.target not in agents:
            known = ", ".join(sorted(agents)) or "none configured"
            raise TandemError("not-found", f"no ACP agent {spec.target!r} ({known})")
        entry = agents[spec.target]
        from tandem.providers.acp import AcpProvider  # lazy: pulls in the acp package

        return cast(
            Provider,
            AcpProvider(spec.target, list(entry.command), dict(entry.env),
                        project_config_files=list(entry.project_config_files),
                        root_session_id=conversation_id, editor=context.editor,
                        choices=dict(context.choices), mcp_servers=context.mcp_servers,
                        project_trusted=context.project_trusted,
                        editor_tools=context.editor_tools),
        )
    row = families.get(spec.family)
    section = section_of(typed, row.name)
    given = dict((credentials or {}).get(spec.family) or {})
    creds = bound_credentials(spec.family, given, getattr(section, "base_url", None),
                              env=env, origin=origin)
    limits = loop_limits(typed)
    # The row's factory imports only its own wire format (start-up).
    wire = row.wire(creds, section)
    return NativeProvider(spec.name, wire, limits=limits, grants=grants, default_model=spec.target,
                          tool_source=context.tool_source, editor=context.editor)
