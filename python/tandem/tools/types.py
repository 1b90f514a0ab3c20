"""What tools and the providers that run them share: capability classes, modes, the asking.

These types sit in `tools` (below `providers`) so the tool executor needs
nothing from the provider contract: it asks through `ToolSink` and reads the
turn through `ToolTurn`, two narrow protocols that `providers.base`'s
`TurnSink` and `TurnRequest` satisfy as they are. `providers.base`
re-exports the names, so a provider's code keeps one place to import from.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

PermissionMode = Literal["ask", "auto-edit", "read-only"]
"""How much a native tool may do without asking (the session's setting)."""
ToolKind = Literal["read", "edit", "execute", "other"]
"""A tool's capability class, which the permission decision reads."""
PermissionAnswer = Literal["allow_once", "allow_session", "reject"]
"""The user's answer to a `PermissionRequest`."""

EDITABLE_TOOLS = ("write_file", "edit_file")
"""The native tools whose proposed change the user may edit before it is written."""


class PermissionReply(BaseModel):
    """The user's answer with what it may carry: an edited change, a rejection's reason."""

    answer: PermissionAnswer
    content: str | None = None
    """The file content the user wants written instead of the model's (``allow_once``)."""
    reason: str | None = None
    """Why the user rejected the call, for the model (``reject``)."""


class PermissionRequest(BaseModel):
    """A question for the user about one tool call."""

    call_id: str
    tool: str
    kind: ToolKind
    title: str
    input: dict[str, object] = Field(default_factory=dict)
    once_only: bool = False
    """Only "allow once" and "reject" are offered (a protected write): an answer of
    "allow for this session" counts as once and is never remembered."""
    editable: bool = False
    """The user may answer with an edited change (`PermissionReply.content`): a native
    write or edit of an unprotected path."""
    reply: PermissionReply | None = None
    """Filled by the sink when the answer carried more than the choice (an edit, a
    reason); the executor reads it after `ToolSink.ask_permission` returns."""


class ToolTurn(Protocol):
    """What the executor reads of the turn it runs tools for."""

    @property
    def session_id(self) -> str:
        """The session whose grants apply."""

    @property
    def permission_mode(self) -> PermissionMode:
        """The session's permission mode."""

    @property
    def read_only(self) -> bool:
        """The capability ceiling: every write or execute is refused."""

    @property
    def protected_paths(self) -> tuple[str, ...]:
        """The ``protected_paths`` setting: writes there are always asked about."""


class ToolSink(Protocol):
    """Where the executor reports a call and asks about it (the turn's sink)."""

    def tool_call(
        self, call_id: str, name: str, kind: ToolKind, title: str, input: dict[str, Any],
        decided_by: str | None = None,
    ) -> None:
        """The model asked for a tool."""

    def tool_result(self, call_id: str, status: str, output: str) -> None:
        """A tool finished: ``completed``, ``failed`` or ``refused``."""

    async def ask_permission(self, request: PermissionRequest) -> PermissionAnswer:
        """Ask the user; returns the answer."""
