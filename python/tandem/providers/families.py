"""The API families of the native providers, one row each: the one place a family is named.

A family is a wire format tandem speaks itself (``openai:MODEL``,
``anthropic:MODEL``); ACP agents are not a family. Everything that differs
between families is a field of its `Family` row: which wire format a turn
uses, where the key and base URL come from, how the server lists its
models, what the agent-server (litellm) calls it, and how Emacs's setup
shows it (the ``hello`` reply lists the rows). The rest of the
backend asks this table; ``tests/python/test_architecture.py`` checks that
no other module names a family.

The settings sections sit in `tandem.config.model` (config is below
providers, so it cannot import this table): a row's ``settings`` is the
`FamilySection` of the settings key named like the family, and importing
this module checks both ways that every section has its row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tandem.config.model import (
    AnthropicSettings,
    FamilySection,
    OpenAISettings,
    family_sections,
)
from tandem.protocol.base import TandemError

if TYPE_CHECKING:
    from tandem.providers.credentials import Credentials
    from tandem.providers.native import Wire

WireFactory = Callable[["Credentials", Any], "Wire"]
"""Build a family's wire format from the credentials and its settings section (or None)."""

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


@dataclass(frozen=True)
class Family:
    """One API family: everything tandem needs to talk to its servers."""

    name: str
    """The family's name: the ``NAME:MODEL`` provider prefix, its settings key and the
    key under which Emacs pushes its credentials."""
    label: str
    """How the setup names it to a person (``OpenAI``)."""
    wire: WireFactory
    """``wire(credentials, settings_section)``: the wire format of one provider. It
    imports its module when called, so a turn loads only its own family's format."""
    key_env: tuple[str, ...]
    """Environment variables that may hold the API key, the first one set wins."""
    base_url_env: str
    """Environment variable that may override the base URL."""
    default_base_url: str
    """Base URL when neither Emacs, the settings nor ``base_url_env`` give one."""
    models_path: str
    """Appended to the base URL: the ``GET`` that lists the server's models."""
    auth_headers: Callable[[str], dict[str, str]]
    """The headers that authenticate a request with the key (the model list's)."""
    litellm_prefix: str
    """The agent-server's (litellm's) name of the family: ``PREFIX/MODEL``."""
    example_model: str
    """A model of the family, for error messages (``NAME:EXAMPLE``)."""
    settings: type[FamilySection] | None = None
    """The settings section under key ``name`` (`tandem.config.model`); None: the family has
    none, its base URL comes from Emacs or ``base_url_env``."""
    compatible_label: str | None = None
    """Set when other servers speak this wire format (llama.cpp, vLLM): the setup offers
    them under this label, and a server at a non-default base URL may need no key."""


def _openai_wire(creds: Credentials, section: Any) -> Wire:
    from tandem.providers.openai import OpenAIWire

    return OpenAIWire(creds)


def _anthropic_wire(creds: Credentials, section: Any) -> Wire:
    from tandem.providers.anthropic import AnthropicWire

    settings = section if isinstance(section, AnthropicSettings) else AnthropicSettings()
    return AnthropicWire(creds, thinking_budget=settings.thinking_budget,
                         prompt_cache=settings.prompt_cache)


def bearer_headers(key: str) -> dict[str, str]:
    """``Authorization: Bearer KEY`` (none without a key: a local server)."""
    return {"authorization": f"Bearer {key}"} if key else {}


def _anthropic_headers(key: str) -> dict[str, str]:
    from tandem.providers.anthropic import API_VERSION

    return {"x-api-key": key, "anthropic-version": API_VERSION}


BUILT_IN: tuple[Family, ...] = (
    Family(name="openai", label="OpenAI", wire=_openai_wire,
           key_env=("OPENAI_API_KEY",), base_url_env="OPENAI_BASE_URL",
           # OpenAI's base includes /v1 (as OPENAI_BASE_URL does); Anthropic's not.
           default_base_url="https://api.openai.com/v1", models_path="/models",
           auth_headers=bearer_headers, litellm_prefix="openai", example_model="gpt-4o",
           settings=OpenAISettings,
           compatible_label="OpenAI-compatible server (llama.cpp, Ollama, vLLM…)"),
    Family(name="anthropic", label="Anthropic", wire=_anthropic_wire,
           key_env=("ANTHROPIC_API_KEY",), base_url_env="ANTHROPIC_BASE_URL",
           default_base_url="https://api.anthropic.com", models_path="/v1/models",
           auth_headers=_anthropic_headers, litellm_prefix="anthropic",
           example_model="claude-sonnet-4-5", settings=AnthropicSettings),
)
"""The families tandem ships, in the order messages list them."""

_TABLE: dict[str, Family] = {}


def register_family(row: Family) -> Family:
    """Add ROW to the table (the built-ins, and test-only families); return it.

    Refused (`TandemError` ``invalid``): a taken or malformed name, ``acp``, no
    key variable, or a settings section that is not ``SettingsModel``'s under
    the family's name.
    """
    if not _NAME.match(row.name) or row.name == "acp":
        raise TandemError("invalid", f"family name {row.name!r} must match {_NAME.pattern}"
                          " and not be acp")
    if row.name in _TABLE:
        raise TandemError("invalid", f"family {row.name!r} is already registered")
    if not row.key_env:
        raise TandemError("invalid", f"family {row.name!r} names no API key variable")
    if row.settings is not None and family_sections().get(row.name) is not row.settings:
        raise TandemError("invalid", f"family {row.name!r}: settings key {row.name} does not "
                          f"hold {row.settings.__name__} (tandem.config.model)")
    _TABLE[row.name] = row
    return row


def unregister_family(name: str) -> None:
    """Remove the test-only family NAME (a built-in one stays)."""
    if name in {f.name for f in BUILT_IN}:
        raise TandemError("invalid", f"family {name!r} is built in")
    _TABLE.pop(name, None)


for _row in BUILT_IN:
    register_family(_row)
_unclaimed = set(family_sections()) - set(_TABLE)
assert not _unclaimed, f"settings sections without a family row: {_unclaimed}"


def families() -> tuple[Family, ...]:
    """Every registered family, built-in ones first."""
    return tuple(_TABLE.values())


def names() -> tuple[str, ...]:
    """The registered family names."""
    return tuple(_TABLE)


def is_family(name: str) -> bool:
    """Whether NAME is a registered family."""
    return name in _TABLE


def _listed(items: list[str], last: str) -> str:
    return ", ".join(items[:-1]) + f" {last} " + items[-1] if len(items) > 1 else "".join(items)


def get(name: str) -> Family:
    """The row of family NAME; `TandemError` ``invalid`` naming the known ones."""
    try:
        return _TABLE[name]
    except KeyError:
        raise TandemError("invalid", f"unknown API family {name!r} (use "
                          f"{_listed(list(_TABLE), 'or')})") from None


def provider_forms(acp: bool = True) -> str:
    """``openai:MODEL, anthropic:MODEL or acp:AGENT``: the provider names, for messages."""
    forms = [f"{n}:MODEL" for n in _TABLE] + (["acp:AGENT"] if acp else [])
    return _listed(forms, "or")


def provider_examples() -> str:
    """``openai:gpt-4o, anthropic:claude-sonnet-4-5``: one example provider per family."""
    return ", ".join(f"{f.name}:{f.example_model}" for f in _TABLE.values())


def key_vars() -> Mapping[str, tuple[str, ...]]:
    """Family -> the environment variables that may hold its key (the doctor's list)."""
    return {f.name: f.key_env for f in _TABLE.values()}

