"""The provider contract: one turn in, one stream of reports out.

Every provider (native OpenAI-compatible, native Anthropic, ACP) implements
`Provider.run`. It reports what happens through a `TurnSink`, which the turn
engine implements by writing journal entries and publishing events; so the
journal looks the same whatever the provider. A provider never writes to the
journal itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from tandem.tools.base import Tool
from tandem.tools.protected import DEFAULT_PROTECTED_PATHS
from tandem.tools.types import (
    PermissionAnswer,
    PermissionMode,
    PermissionReply,
    PermissionRequest,
    ToolKind,
)

__all__ = [
    "Conversation", "ImageRef", "Message", "Outcome", "PermissionAnswer", "PermissionMode",
    "PermissionReply", "PermissionRequest", "PreparesTurns", "Provider", "SteeredSink",
    "ToolCallRef", "ToolKind", "ToolSource", "TurnRequest", "TurnResult", "TurnSink", "Usage",
]
"""The permission types are `tools.types`'s, re-exported: providers import them from here."""

Outcome = Literal["succeeded", "failed", "aborted"]


class ToolCallRef(BaseModel):
    """A tool call inside an assistant message of the context."""

    id: str
    name: str
    input: dict[str, object] = Field(default_factory=dict)


class ImageRef(BaseModel):
    """An image a user message carries: what the journal records of it, and its bytes.

    ``data`` (base64) is filled by the turn engine from the image store just
    before a request is sent; the projection and the journal hold only the
    digest. An image whose bytes are gone, or one past the context's image
    budget, is sent with ``data`` empty: a wire writes a text marker instead.
    """

    digest: str
    media_type: str
    size: int
    name: str
    data: str = Field(default="", repr=False)
    """The bytes in base64; empty until filled, or when they cannot be sent."""
    note: str = ""
    """Why ``data`` stays empty (the marker's words): missing, or an older image not sent."""


def image_marker(image: ImageRef) -> str:
    """The text a wire sends in place of an image it has no bytes for."""
    why = image.note or "not available"
    return f"[image {image.name} ({image.media_type}, {image.size} bytes): {why}]"


class Message(BaseModel):
    """One provider-neutral context message (what the projection produces).

    ``role`` is ``user``, ``assistant`` or ``tool``. An assistant message may
    carry tool calls; a tool message answers one call by ``call_id``; a user
    message may carry images (`ImageRef`).
    """

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    tool_calls: list[ToolCallRef] = Field(default_factory=list)
    call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    images: list[ImageRef] = Field(default_factory=list)


class TurnRequest(BaseModel):
    """Everything a provider needs to run one turn."""

    session_id: str
    turn: int
    root: Path
    """Workspace root: tools resolve paths inside it; ACP agents start here."""
    model: str = ""
    system: str = ""
    instructions: str = ""
    """Project instructions (AGENTS.md…) a native loop adds to its system text."""
    messages: list[Message]
    """Context: the projection for chat, the isolated prompt for a directive."""
    permission_mode: PermissionMode = "ask"
    read_only: bool = False
    """Capability ceiling (discussion): every write or execute is refused."""
    isolated: bool = False
    """A directive request: ACP opens a fresh session and stores no id."""
    max_tokens: int = 8192
    protected_paths: tuple[str, ...] = DEFAULT_PROTECTED_PATHS
    """The ``protected_paths`` setting of the root: a write there is always asked about."""


ToolSource = Callable[[TurnRequest], Awaitable[list[Tool]]]
"""Extra tools for one turn, from its `TurnRequest` (the session's MCP servers)."""


class Usage(BaseModel):
    """Token counts of a turn (summed over the agent loop)."""

    input_tokens: int = 0
    """Input not served from a prompt cache."""
    output_tokens: int = 0
    cache_read_tokens: int = 0
    """Input read from the provider's prompt cache (priced lower)."""
    cache_write_tokens: int = 0
    """Input written to the provider's prompt cache (Anthropic prices it higher)."""

    def add(self, other: Usage) -> None:
        """Add OTHER's counts to these (one step of an agent loop)."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens


class RemoteTurnStart(BaseModel):
    """Where a remote turn started: its agent-server conversation and the event before it.

    ``after_event_id`` is the conversation's last event before the turn's
    message (None: the conversation had none). A Rewind before the turn moves
    the conversation back there (``/navigate``); the engine journals it as a
    ``remote_turn`` entry.
    """

    conversation_id: str = Field(min_length=1)
    after_event_id: str | None = None


class TurnResult(BaseModel):
    """How a provider's turn ended. Cancellation ends it as ``aborted``."""

    outcome: Outcome
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)
    ran_shell: bool = False
    """A shell command ran: it may have written outside the root."""
    wrote_outside: list[str] = Field(default_factory=list)
    """Paths outside the root that an agent reported writing."""
    acp_session_id: str | None = None
    """Root chat only: the ACP conversation to continue next time."""
    remote_turn: RemoteTurnStart | None = None
    """A remote engine's turn: where it started on the server (for Rewind)."""
    workspace_untouched: bool = False
    """The provider knows no action of the turn ran (every one waited for tandem's
    confirmation and none was allowed): the agent changed no file. A remote
    checkpoint then skips its after-turn sync (docs/remote.md)."""


class TurnSink(Protocol):
    """What a provider reports to; the turn engine implements it."""

    def text(self, delta: str) -> None:
        """Stream a piece of assistant text."""

    def reasoning(self, delta: str) -> None:
        """Stream a piece of reasoning."""

    def end_message(self) -> None:
        """The current assistant message (text and reasoning) is complete."""

    def tool_call(
        self, call_id: str, name: str, kind: ToolKind, title: str, input: dict[str, Any],
        decided_by: str | None = None,
    ) -> None:
        """The model asked for a tool."""

    def tool_result(self, call_id: str, status: str, output: str) -> None:
        """A tool finished: ``completed``, ``failed`` or ``refused``."""

    def plan(self, entries: list[dict[str, Any]]) -> None:
        """An agent's plan (ACP)."""

    async def ask_permission(self, request: PermissionRequest) -> PermissionAnswer:
        """Ask the user; returns the answer. Read-only mode never gets here."""


@runtime_checkable
class SteeredSink(Protocol):
    """A sink holding guidance given mid-turn (``turns/steer``) for an engine whose
    server takes it later (the remote engine): handed to it, then reported taken.

    The turn engine's sink is one; a sink that takes no guidance (a
    compaction's, a test's) is not, and the engine then never asks for any.
    """

    steers: list[tuple[str, str]]
    """Guidance given and not yet handed: (text, when)."""

    def hand_steers(self) -> list[str]:
        """The guidance waiting, now the engine's to deliver."""

    def steer_taken(self, text: str) -> bool:
        """The server took handed guidance TEXT: journal it there."""


@runtime_checkable
class PreparesTurns(Protocol):
    """A provider that opens what a turn needs while the pre-turn checkpoint is taken.

    The engine calls `prepare_turn` before the checkpoint (which for a remote
    session is a round trip to the server) and then either runs the turn,
    which takes what was prepared, or calls `abandon_prepared` (the checkpoint
    failed, the journal refused the turn). Preparing only reads: nothing is
    posted that could change the conversation or the workspace.
    """

    def prepare_turn(self, isolated: bool) -> None:
        """Start opening the next turn's connections (ISOLATED: a directive's)."""

    async def abandon_prepared(self) -> None:
        """Close what `prepare_turn` opened; the turn will not run."""


class Conversation(BaseModel):
    """The root chat's conversation kept by the provider itself (an agent's session)."""

    id: str
    how: str
    """How the last turn went on with it: ``new``, ``load``, ``resume`` or ``seeded``."""


class Provider(Protocol):
    """A way to run turns: native HTTP APIs or an ACP agent.

    An agent keeps the root chat's conversation itself; compaction and rewind
    make it start afresh (`reset_conversation`). A provider that keeps none
    (native: tandem sends the projection each turn) has nothing to reset.
    """

    name: str

    @property
    def conversation(self) -> Conversation | None:
        """The root chat's conversation as the last turn left it (None: keeps none)."""

    @property
    def conversation_id(self) -> str | None:
        """The id of the root chat's conversation this provider continues, if any."""

    def reset_conversation(self, conversation_id: str | None = None) -> None:
        """Continue from CONVERSATION_ID next time, or (None) start a new, seeded one."""

    async def image_refusal(self, root: Path) -> str | None:
        """Why this provider cannot take an image in a request (one sentence), else None.

        Asked before a request with images is accepted, so a refusal loses nothing."""

    async def run(self, request: TurnRequest, sink: TurnSink) -> TurnResult:
        """Run one turn to its end, reporting through SINK."""

    async def close(self) -> None:
        """Release connections and processes."""
