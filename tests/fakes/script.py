"""Scripts that drive the fake LLM servers: what to answer, in what order.

A script is a JSON document (also used by ``make demo``)::

    {
      "default": {"text": "OK"},
      "steps": [
        {"match": {"has_tools": true}, "reply": {"text": "Hello", "thinking": "hm"}},
        {"reply": {"tool_calls": [{"name": "write_file",
                                   "input": {"path": "a.txt", "content": "x"}}]}},
        {"reply": {"status": 429, "headers": {"retry-after": "0"}, "message": "slow down"}},
        {"reply": {"text": "partial answer", "broken": true}}
      ]
    }

A bare list of replies is accepted too (each becomes a step without a match).

Each request consumes the first unconsumed step whose ``match`` accepts it;
a request no step accepts gets ``default`` (or a 500 error "script exhausted"
when there is none). A script may also be any callable taking the recorded
request and returning a ``Reply`` (or None for the default), for scenarios that
depend on what the client sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ToolCallSpec(BaseModel):
    """One tool call the fake model makes."""

    model_config = ConfigDict(extra="forbid")

    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    filler: int = Field(default=0, ge=0)
    """Characters of ``x`` streamed as one more string argument, ``filler_key``,
    made piece by piece: a hostile model's huge argument, never held whole."""
    filler_key: str = "content"

    def json_pieces(self, size: int) -> Iterator[str]:
        """The input's JSON text in pieces of about SIZE characters (the filler lazily)."""
        text = json.dumps(self.input)
        if self.filler:
            lead = text[:-1] + (", " if self.input else "")
            text = lead + json.dumps(self.filler_key) + ': "'
        for i in range(0, len(text), size):
            yield text[i : i + size]
        if self.filler:
            for done in range(0, self.filler, size):
                yield "x" * min(size, self.filler - done)
            yield '"}'


class Reply(BaseModel):
    """One scripted answer: text, tool calls, an HTTP error or a broken stream."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    thinking: str = ""
    """Reasoning: Anthropic ``thinking`` blocks, OpenAI ``reasoning_content``."""
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    status: int = 200
    """An HTTP status >= 400 answers with that error instead of a stream."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra response headers (``retry-after`` …)."""
    message: str = "scripted error"
    """The error message of an error status or of a stream error."""
    stream_error: bool = False
    """Send an in-stream error event after the content (Anthropic ``error``)."""
    broken: bool = False
    """Cut the connection halfway through the text, without the end events."""
    stall: bool = False
    """After the content, keep the stream open with pings until the client leaves."""
    chunk_size: int = Field(default=6, ge=1)
    """Characters per text / JSON delta."""
    delay: float = Field(default=0.0, ge=0.0)
    """Seconds to sleep between streamed events."""
    input_tokens: int = 12
    output_tokens: int = 0
    """0 means: count characters of the answer divided by four."""
    cache_read_tokens: int = 0
    """Input reported as read from the prompt cache (OpenAI: part of prompt_tokens)."""
    cache_write_tokens: int = 0
    """Input reported as written to the prompt cache (Anthropic only)."""
    stop_reason: str | None = None
    """Override the stop reason (``max_tokens`` …)."""

    @model_validator(mode="after")
    def _status_range(self) -> Reply:
        if not (self.status == 200 or 400 <= self.status <= 599):
            raise ValueError(f"status must be 200 or 400..599, not {self.status}")
        return self

    def answer_tokens(self) -> int:
        """Output token count reported for this reply."""
        if self.output_tokens:
            return self.output_tokens
        size = len(self.text) + len(self.thinking)
        size += sum(len(json.dumps(c.input)) + c.filler for c in self.tool_calls)
        return max(1, size // 4)


class Match(BaseModel):
    """Which requests a step accepts; every given condition must hold."""

    model_config = ConfigDict(extra="forbid")

    has_tools: bool | None = None
    """The request offers tools (Claude Code's agent requests do; titles don't)."""
    last_user_contains: str | None = None
    """Text of the last user message (text parts and tool results) contains this."""
    any_contains: str | None = None
    """The serialized request body contains this string."""
    system_contains: str | None = None
    model_contains: str | None = None
    stream: bool | None = None

    def accepts(self, body: dict[str, Any]) -> bool:
        """Whether the request BODY satisfies every condition."""
        if self.has_tools is not None and bool(body.get("tools")) != self.has_tools:
            return False
        if self.stream is not None and bool(body.get("stream")) != self.stream:
            return False
        if self.model_contains is not None and self.model_contains not in str(
            body.get("model", "")
        ):
            return False
        if self.system_contains is not None and self.system_contains not in system_text(body):
            return False
        if self.last_user_contains is not None and (
            self.last_user_contains not in last_user_text(body)
        ):
            return False
        if self.any_contains is not None and self.any_contains not in json.dumps(body):
            return False
        return True


class Step(BaseModel):
    """A reply, given to the first request its match accepts."""

    model_config = ConfigDict(extra="forbid")

    match: Match = Field(default_factory=Match)
    reply: Reply


class ScriptFile(BaseModel):
    """The JSON form of a script."""

    model_config = ConfigDict(extra="forbid")

    default: Reply | None = None
    steps: list[Step] = Field(default_factory=list)


ScriptFn = Callable[[dict[str, Any]], "Reply | None"]


class Script:
    """A thread-safe queue of steps; see the module docstring for the rules."""

    def __init__(
        self,
        steps: list[Step | Reply] | None = None,
        default: Reply | None = None,
        fn: ScriptFn | None = None,
    ) -> None:
        self._steps = [s if isinstance(s, Step) else Step(reply=s) for s in steps or []]
        self._used = [False] * len(self._steps)
        self._default = default
        self._fn = fn
        self._lock = threading.Lock()

    @classmethod
    def load(cls, data: Any) -> Script:
        """Build a script from parsed JSON: an object with steps, or a list of replies."""
        if isinstance(data, list):
            return cls([Reply.model_validate(r) for r in data])
        parsed = ScriptFile.model_validate(data)
        return cls(list(parsed.steps), parsed.default)

    @classmethod
    def from_file(cls, path: str | Path) -> Script:
        """Read a script from a JSON file."""
        return cls.load(json.loads(Path(path).read_text(encoding="utf-8")))

    @classmethod
    def of(cls, fn: ScriptFn, default: Reply | None = None) -> Script:
        """A script whose reply is computed from each request body by FN."""
        return cls(default=default, fn=fn)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        """The reply to a request with BODY; consumes the step it takes."""
        with self._lock:
            if self._fn is not None:
                got = self._fn(body)
                if got is not None:
                    return got
            for i, step in enumerate(self._steps):
                if not self._used[i] and step.match.accepts(body):
                    self._used[i] = True
                    return step.reply
            if self._default is not None:
                return self._default
        return Reply(status=500, message="fake server: script exhausted")

    def remaining(self) -> int:
        """How many steps no request has taken yet."""
        with self._lock:
            return self._used.count(False)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif part.get("type") == "tool_result":
                parts.append(_content_text(part.get("content")))
    return "\n".join(parts)


def last_user_text(body: dict[str, Any]) -> str:
    """Text of the last user (or OpenAI tool) message of a request body."""
    for msg in reversed(body.get("messages") or []):
        if isinstance(msg, dict) and msg.get("role") in ("user", "tool"):
            return _content_text(msg.get("content"))
    return ""


def system_text(body: dict[str, Any]) -> str:
    """The system prompt of a request body, in either wire format."""
    system = body.get("system")
    if system is not None:
        return _content_text(system)
    for msg in body.get("messages") or []:
        if isinstance(msg, dict) and msg.get("role") in ("system", "developer"):
            return _content_text(msg.get("content"))
    return ""
