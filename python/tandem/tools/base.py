"""What every native tool is: a name, a capability class, an argument model, a runner."""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from tandem.config.model import DEFAULT_PROTECTED_PATHS
from tandem.editor import EditorBridge
from tandem.tools.types import ToolKind


class ToolError(Exception):
    """A tool failed in a way the model should be told about (bad path, no match…)."""


INVALID_INPUT = "_invalid"
"""Key a provider puts in a tool input it could not accept, with the reason as value.

The executor answers such a call with a failed result naming the reason
(a ``NaN`` in the JSON, say), so the model can correct itself.
"""


class ToolArgs(BaseModel):
    """Base of every tool's argument model: unknown arguments are an error."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class ToolContext:
    """Where and how a tool runs."""

    root: Path
    """Workspace root: every path resolves inside it."""
    shell_timeout: float = 120.0
    """Upper bound (seconds) on one shell command."""
    output_cap: int = 64 * 1024
    """Upper bound (bytes) on what a tool returns to the model."""
    tool_timeout: float = 30.0
    """Time budget (seconds) of one file tool call (walk, read, grep, write)."""
    ran_shell: list[str] = field(default_factory=list)
    """Shell commands run during the turn (any of them may write outside the root)."""
    protected_paths: tuple[str, ...] = DEFAULT_PROTECTED_PATHS
    """Writes under these are refused unless the user allowed that very write."""
    approved: set[Path] = field(default_factory=set)
    """Protected paths (resolved) the user allowed for the call now running."""
    editor: EditorBridge | None = None
    """The user's editor the editor tools ask (None: none, they answer "needs Emacs")."""


Runner = Callable[[ToolContext, Any], Awaitable[str]]


@dataclass(frozen=True)
class Tool:
    """One native tool offered to the model."""

    name: str
    kind: ToolKind
    """Capability class: ``read``, ``edit`` or ``execute``; it decides permissions."""
    description: str
    args: type[ToolArgs]
    run: Runner
    title: Callable[[Any], str]
    """A one-line human title for a call (``Edit src/a.py``)."""
    writes: Callable[[Any], list[str]] | None = None
    """The paths a call writes, as given (for the protected-path question)."""

    def schema(self) -> dict[str, Any]:
        """JSON schema of the arguments, as both wire formats take it."""
        return copy.deepcopy(_schema(self.args))


@functools.cache
def _schema(args: type[ToolArgs]) -> dict[str, Any]:
    # Building a pydantic schema is slow; it never changes for a class.
    schema = args.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


def cap_text(text: str, cap: int) -> str:
    """TEXT cut to at most CAP bytes of UTF-8, with a note saying how much was dropped."""
    data = text.encode("utf-8")
    if len(data) <= cap:
        return text
    kept = data[:cap].decode("utf-8", "ignore")
    return f"{kept}\n[output truncated: {len(data) - cap} more bytes not shown]"

