"""The settings model: every key tandem reads, typed and bounded.

One model serves both files (``~/.config/tandem/settings.json`` and
``<root>/.tandem/settings.json``): every field is optional, unknown keys are
an error, values are strict (no ``"1"`` for 1, no ``true`` for 1) and bounded
so a hostile file cannot make the backend allocate or wait without limit.

Fields marked `TRUSTED_ONLY` choose where a credential goes or which
program runs; a project file may set them only when the user trusts it
(see `tandem.config.layers`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    StringConstraints,
    Tag,
    ValidationError,
)

from tandem.config.rules import PermissionRule
from tandem.protocol.base import TandemError

# Same order as providers.base: typing caches equal Literals, and docs render the first.
PermissionMode = Literal["ask", "auto-edit", "read-only"]
MODE_ORDER: dict[str, int] = {"read-only": 0, "ask": 1, "auto-edit": 2}
"""Permission modes from tightest to loosest."""

TRUSTED_ONLY: dict[str, JsonValue] = {"trusted_only": True}
"""``json_schema_extra`` of a field only a trusted layer may set."""

MAX_FILE_BYTES = 1 << 20
"""A settings file larger than this is refused before it is parsed."""

_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"

DEFAULT_PROTECTED_PATHS: tuple[str, ...] = (
    ".tandem/", ".claude/", ".mcp.json", ".envrc", ".dir-locals.el", ".vscode/",
    ".github/workflows/",
)
"""Paths whose files make other programs run or reconfigure tandem (``protected_paths``).

A write to one is always asked about, in every permission mode; git hooks
(``.git/hooks``, refused outright, and the folder ``core.hooksPath`` names)
are protected whatever the list says (`tandem.tools.protected`)."""


def _check_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http(s) URL")
    if any(c.isspace() or ord(c) < 32 for c in value):
        raise ValueError("the URL contains whitespace or a control character")
    return value.rstrip("/")


def _check_provider(value: str) -> str:
    family, colon, target = value.partition(":")
    known = [*family_sections(), "acp"]
    if not colon or family not in known or not re.fullmatch(r"\S{1,200}", target):
        forms = [f"{name}:MODEL" for name in known[:-1]] + ["acp:AGENT"]
        raise ValueError(f"{value!r} must look like {', '.join(forms[:-1])} or {forms[-1]}")
    return value


Url = Annotated[str, StringConstraints(max_length=2048), AfterValidator(_check_url)]
Name = Annotated[str, StringConstraints(pattern=_NAME)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
Arg = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
EnvValue = Annotated[str, StringConstraints(max_length=32768)]
Seconds = Annotated[float, Field(ge=0, le=86400)]


def _check_protected(value: str) -> str:
    parts = value.strip("/").split("/")
    if not value.strip("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{value!r} must be a relative path such as .claude/ or .envrc")
    if any(ord(c) < 32 for c in value) or "\\" in value:
        raise ValueError(f"{value!r} holds a control character or a backslash")
    return value


ProtectedPath = Annotated[str, StringConstraints(min_length=1, max_length=256),
                          AfterValidator(_check_protected)]


class Section(BaseModel):
    """Base of every settings object: strict, closed, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class FamilySection(Section):
    """The settings section of an API family (`tandem.providers.families`).

    A field of `SettingsModel` whose type is one is the section of the
    family of the same name: its provider names are valid ``default_provider``
    values, and a project may name them when the user's settings do.
    """


class OpenAISettings(FamilySection):
    """``openai``: an OpenAI-compatible server."""

    base_url: Url | None = Field(default=None, json_schema_extra=TRUSTED_ONLY)


class AnthropicSettings(FamilySection):
    """``anthropic``: the Messages API."""

    base_url: Url | None = Field(default=None, json_schema_extra=TRUSTED_ONLY)
    thinking_budget: int = Field(default=0, ge=0, le=200_000)
    prompt_cache: bool = True


class NativeSettings(Section):
    """``native``: bounds of tandem's own agent loop (see `LoopLimits`).

    The defaults are `LoopLimits`' own; a project may only lower them.
    """

    max_retries: int = Field(default=3, ge=0, le=100)
    backoff: Seconds = 0.5
    max_retry_wait: Seconds = 60.0
    max_steps: int = Field(default=50, ge=0, le=10_000)
    connect_timeout: Seconds = 15.0
    read_timeout: Seconds = 300.0
    shell_timeout: Seconds = 120.0
    output_cap: int = Field(default=64 * 1024, ge=0, le=64 << 20)
    tool_timeout: Seconds = 30.0
    max_tool_input_bytes: int = Field(default=16 << 20, ge=1024, le=256 << 20)
    """Tool input one model response may stream (all its calls); past it the call fails."""


class CheckpointSettings(Section):
    """``checkpoints``: how long the private checkpoint store keeps history.

    Unset: every checkpoint is kept as long as its session's journal. Either
    key deletes history Rewind needs, so only the user (or a trusted
    project) may set it.
    """

    keep_turns: int | None = Field(default=None, ge=1, le=1_000_000)
    keep_days: int | None = Field(default=None, ge=1, le=36_500)


def _check_relative(value: str) -> str:
    parts = value.split("/")
    if value.startswith("/") or ".." in parts or "" in parts or "\0" in value:
        raise ValueError(f"{value!r} must be a path inside the project, such as .agent/config")
    return value


RelPath = Annotated[str, StringConstraints(min_length=1, max_length=512),
                    AfterValidator(_check_relative)]


class MentionSettings(Section):
    """``mentions``: how much text the ``@`` mentions of one request may attach."""

    max_bytes: int = Field(default=100_000, ge=1, le=2 << 20)
    """Bytes of one mention's text; a longer one is cut, and the cut is said."""
    total_bytes: int = Field(default=400_000, ge=1, le=2 << 20)
    """Bytes of all of one request's mentions; past it the request is refused. At most
    2 MiB: the request's journal entry reaches Emacs in one event frame (4 MiB)."""


DEFAULT_INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", ".tandem/instructions.md")
"""Project instruction files looked for when ``project_instructions`` is unset."""
DEFAULT_INSTRUCTIONS_MAX_BYTES = 64 * 1024
"""Bytes of project instructions one request carries when the setting is unset."""


class AcpAgent(Section):
    """One ``acp_agents`` entry: the program to start and its extra environment."""

    command: list[Arg] = Field(min_length=1, max_length=256)
    env: dict[EnvName, EnvValue] = Field(default_factory=dict, max_length=256)
    project_config_files: list[RelPath] = Field(default_factory=list, max_length=64)
    """Project files the agent reads as its configuration (beyond those tandem knows):
    while the project is untrusted and one exists, tandem does not start the agent."""


class McpStdioServer(Section):
    """An ``mcp_servers`` entry run as a program (the ``.mcp.json`` shape)."""

    type: Literal["stdio"] = "stdio"
    command: Arg
    args: list[Arg] = Field(default_factory=list, max_length=256)
    env: dict[EnvName, EnvValue] = Field(default_factory=dict, max_length=256)


HeaderName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")]
HeaderValue = Annotated[str, StringConstraints(max_length=8192, pattern=r"^[^\r\n\x00]*$")]


class McpHttpServer(Section):
    """An ``mcp_servers`` entry reached over streamable HTTP."""

    type: Literal["http"]
    url: Url
    headers: dict[HeaderName, HeaderValue] = Field(default_factory=dict, max_length=64)


def _mcp_kind(value: Any) -> str:
    kind = value.get("type", "stdio") if isinstance(value, dict) else getattr(value, "type", "")
    return kind if kind in ("stdio", "http") else "unknown"


McpServer = Annotated[
    Annotated[McpStdioServer, Tag("stdio")] | Annotated[McpHttpServer, Tag("http")],
    Discriminator(_mcp_kind, custom_error_type="mcp_server_kind",
                  custom_error_message='type must be "stdio" (the default) or "http"'),
]
"""One ``mcp_servers`` entry: a program (stdio) or a URL (``"type": "http"``)."""


class SettingsModel(Section):
    """Everything a settings file may hold; each field optional."""

    default_provider: Annotated[str, AfterValidator(_check_provider)] | None = None
    permission_mode: PermissionMode | None = None
    openai: OpenAISettings | None = None
    anthropic: AnthropicSettings | None = None
    native: NativeSettings | None = None
    acp_agents: dict[Name, AcpAgent] | None = Field(
        default=None, max_length=64, json_schema_extra=TRUSTED_ONLY)
    mcp_servers: dict[Name, McpServer] | None = Field(
        default=None, max_length=64, json_schema_extra=TRUSTED_ONLY)
    context_windows: dict[Annotated[str, StringConstraints(min_length=1, max_length=200)],
                          Annotated[int, Field(ge=1024, le=100_000_000)]] | None = Field(
        default=None, max_length=1000)
    compaction_threshold: float | None = Field(default=None, ge=0.05, le=1.0)
    compaction_keep_turns: int | None = Field(default=None, ge=0, le=10_000)
    auto_compact: bool | None = None
    image_max_bytes: int | None = Field(default=None, ge=1024, le=16 << 20)
    """The largest image a request may carry (bytes; unset: 5 MiB). At most 16 MiB: the
    clipboard's bytes travel in one EPC frame (16 MiB) as base64."""
    checkpoints: CheckpointSettings | None = Field(default=None, json_schema_extra=TRUSTED_ONLY)
    protected_paths: list[ProtectedPath] | None = Field(default=None, max_length=256)
    """Writes here are always asked (`DEFAULT_PROTECTED_PATHS` when unset); an untrusted
    project may add entries, never remove one (`tandem.config.layers`)."""
    mentions: MentionSettings | None = None
    project_instructions: list[RelPath] | None = Field(default=None, max_length=32)
    """Instruction files (text for the model) read from the session's folder and each
    parent up to the project root (`DEFAULT_INSTRUCTION_FILES` when unset)."""
    project_instructions_max_bytes: int | None = Field(default=None, ge=0, le=4 << 20)
    """Bytes of project instructions a request carries in all (0: none)."""
    permission_rules: list[PermissionRule] | None = Field(default=None, max_length=1024)
    """Remembered permission answers (`tandem.config.rules`); read only from the user's
    own file, never from a project's, trusted or not."""

    def protected(self) -> tuple[str, ...]:
        """The effective protected paths: the setting, or the defaults."""
        if self.protected_paths is None:
            return DEFAULT_PROTECTED_PATHS
        return tuple(self.protected_paths)

    def mention_limits(self) -> MentionSettings:
        """The ``mentions`` caps: the setting, or the defaults."""
        return self.mentions if self.mentions is not None else MentionSettings()

    def instruction_files(self) -> tuple[tuple[str, ...], int]:
        """The project instruction file names and their cap in bytes (settings or defaults)."""
        names = (DEFAULT_INSTRUCTION_FILES if self.project_instructions is None
                 else tuple(self.project_instructions))
        cap = (DEFAULT_INSTRUCTIONS_MAX_BYTES if self.project_instructions_max_bytes is None
               else self.project_instructions_max_bytes)
        return names, cap

    def plain(self) -> dict[str, object]:
        """The keys that were set, as plain JSON data."""
        return self.model_dump(mode="json", exclude_unset=True)


def family_sections() -> dict[str, type[FamilySection]]:
    """Settings key -> section of every API family `SettingsModel` has a section for."""
    out: dict[str, type[FamilySection]] = {}
    for name, info in SettingsModel.model_fields.items():
        section = _section_type(info.annotation)
        if section is not None and issubclass(section, FamilySection):
            out[name] = section
    return out


_MESSAGES = {
    "extra_forbidden": "unknown key",
    "model_type": "must be a map",
    "dict_type": "must be a map",
    "model_attributes_type": "must be a map",
}


_NUMBER_ERRORS = ("int_type", "float_type", "int_from_float", "greater_than_equal",
                  "less_than_equal", "finite_number")


def _field_at(loc: tuple[Any, ...]) -> Any:
    model: type[BaseModel] | None = SettingsModel
    info = None
    for part in loc:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return None
        info = model.model_fields[part]
        model = _section_type(info.annotation)
    return info


def _bounds(loc: tuple[Any, ...], ctx: dict[str, Any]) -> str:
    info = _field_at(loc)
    ge = next((m.ge for m in getattr(info, "metadata", []) if hasattr(m, "ge")), ctx.get("ge"))
    le = next((m.le for m in getattr(info, "metadata", []) if hasattr(m, "le")), ctx.get("le"))
    return "expected a number" + (f" >= {ge}" if ge is not None else "") + (
        f" and <= {le}" if le is not None else "")


def describe(error: ValidationError) -> str:
    """The first problem of ERROR as ``key.path: what is wrong``."""
    first = error.errors(include_url=False)[0]
    loc = tuple(first["loc"])
    if loc[:1] == ("mcp_servers",) and len(loc) > 2 and loc[2] in ("stdio", "http"):
        loc = loc[:2] + loc[3:]  # the union's tag is no key of the file
    where = ".".join(str(p) for p in loc) or "(top level)"
    kind = first["type"]
    if kind in _MESSAGES:
        return f"{where}: {_MESSAGES[kind]}"
    if kind in _NUMBER_ERRORS:
        return f"{where}: {_bounds(loc, first.get('ctx') or {})}, not {first['input']!r}"[:300]
    message = str(first["msg"]).removeprefix("Value error, ")
    if kind.endswith("_type"):
        message += f", not {type(first['input']).__name__}"
    return f"{where}: {message}"


def validate(data: Any, source: str) -> SettingsModel:
    """DATA as a `SettingsModel`; a clear ``invalid-settings`` error naming SOURCE and the key."""
    try:
        return SettingsModel.model_validate(data)
    except ValidationError as exc:
        raise TandemError("invalid-settings", f"Settings {source}: {describe(exc)}") from None


def trusted_only_keys(model: type[BaseModel] = SettingsModel, prefix: str = "") -> set[str]:
    """Dotted names of every field only a trusted layer may set."""
    out: set[str] = set()
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get("trusted_only"):
            out.add(prefix + name)
            continue
        sub = _section_type(info.annotation)
        if sub is not None:
            out |= trusted_only_keys(sub, prefix + name + ".")
    return out


def _section_type(annotation: Any) -> type[BaseModel] | None:
    for arg in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(arg, type) and issubclass(arg, Section):
            return arg
    return None
