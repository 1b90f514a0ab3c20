"""Native provider over the Anthropic Messages API (``POST /v1/messages``, SSE)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Literal, Required, TypedDict

from httpx_sse import ServerSentEvent

from tandem.providers.base import (
    ImageRef,
    Message,
    ToolCallRef,
    TurnRequest,
    TurnSink,
    image_marker,
)
from tandem.providers.credentials import Credentials
from tandem.providers.native import ProviderError, StepResult, Wire
from tandem.providers.tool_input import (
    MAX_CALLS,
    MAX_TOOL_INPUT,
    InputBudget,
    StreamedInput,
    checked_tool_input,
)
from tandem.tools.base import Tool
from tandem.tools.executor import ToolOutcome

API_VERSION = "2023-06-01"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_STREAMED = ("text", "thinking", "signature")
"""Block fields that arrive as deltas (``partial_json`` is parsed apart)."""


def _safe(name: str) -> str:
    # History may hold ids and names from other providers (ACP agents); the API
    # accepts only [A-Za-z0-9_-] in tool_use ids and names.
    return _UNSAFE.sub("_", name)[:64] or "_"


def _extend(out: list[dict[str, object]], messages: Iterable[Message]) -> None:
    """Append MESSAGES to OUT as content blocks, merging neighbours of one role.

    A dict OUT held before this call is never changed (a merge into it
    replaces it by a copy): a converted context is kept between turns.
    """
    mine = False  # whether out[-1] was made by this call

    def add(role: str, blocks: list[dict[str, object]]) -> None:
        nonlocal mine
        # The API wants user and assistant to alternate: merge neighbours.
        content = out[-1]["content"] if out and out[-1]["role"] == role else None
        if isinstance(content, list):  # every message made here holds a list
            if mine:
                content.extend(blocks)
            else:
                out[-1] = {"role": role, "content": [*content, *blocks]}
        else:
            out.append({"role": role, "content": blocks})
        mine = True

    for m in messages:
        if m.role == "user":
            # Images first: the API's own advice for image-and-text prompts.
            user = [_image(i) for i in m.images]
            if m.text:
                user.append({"type": "text", "text": m.text})
            if user:
                add("user", user)
        elif m.role == "assistant":
            blocks: list[dict[str, object]] = [{"type": "text", "text": m.text}] if m.text else []
            blocks += [
                {"type": "tool_use", "id": _safe(t.id), "name": _safe(t.name), "input": t.input}
                for t in m.tool_calls
            ]
            if blocks:
                add("assistant", blocks)
        else:
            add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": _safe(m.call_id or ""),
                        "content": m.text,
                        "is_error": m.is_error,
                    }
                ],
            )


def _image(image: ImageRef) -> dict[str, object]:
    """An ``image`` content block with the bytes in base64, or a text marker without them."""
    if not image.data:
        return {"type": "text", "text": image_marker(image)}
    return {"type": "image",
            "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}


def _room(blocks: dict[int, dict[str, Any]], idx: int) -> None:
    """Refuse a response of more than `MAX_CALLS` content blocks."""
    if idx not in blocks and len(blocks) >= MAX_CALLS:
        raise ProviderError(f"the model sent more than {MAX_CALLS} content blocks in one response")


EPHEMERAL = {"type": "ephemeral"}


class _ToolDefinition(TypedDict):
    """One entry of a request's ``tools``: the JSON schema of its arguments included."""

    name: str
    description: str
    input_schema: Mapping[str, object]


class _Thinking(TypedDict):
    """Extended thinking, with its budget of tokens."""

    type: Literal["enabled"]
    budget_tokens: int


class _Body(TypedDict, total=False):
    """The body of one streaming Messages API request."""

    model: Required[str]
    max_tokens: Required[int]
    messages: Required[list[dict[str, object]]]
    stream: Required[bool]
    system: str | list[dict[str, object]]
    """The system prompt; as a text block when it carries the prompt-cache mark."""
    tools: list[_ToolDefinition]
    thinking: _Thinking


def _with_cache_mark(messages: list[dict[str, object]]) -> list[dict[str, object]]:
    """MESSAGES with a prompt-cache breakpoint on the last block of the last message.

    Each step of the loop re-sends the whole context; with the breakpoint the
    API reads the unchanged prefix from its cache. The mark goes on a copy, so
    the loop's own messages never pile up breakpoints (the API allows four).
    """
    content = messages[-1].get("content") if messages else None
    if not isinstance(content, list):
        return messages
    last = dict(messages[-1])
    blocks = list(content)
    if not blocks or blocks[-1].get("type") in ("thinking", "redacted_thinking"):
        return messages
    blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    last["content"] = blocks
    return [*messages[:-1], last]


class AnthropicWire(Wire):
    """Request and stream format of the Anthropic Messages API."""

    def __init__(
        self, credentials: Credentials, thinking_budget: int = 0, prompt_cache: bool = True
    ) -> None:
        super().__init__(credentials)
        if thinking_budget < 0:
            raise ValueError("thinking_budget must be >= 0")
        self.thinking_budget = thinking_budget
        self.prompt_cache = prompt_cache

    def url(self) -> str:
        """``{base}/v1/messages``."""
        return f"{self.credentials.base_url}/v1/messages"

    def headers(self) -> dict[str, str]:
        """``x-api-key`` and ``anthropic-version``."""
        return {
            "x-api-key": self.credentials.key(),
            "anthropic-version": API_VERSION,
            "accept": "text/event-stream",
        }

    def extend_messages(self, out: list[dict[str, object]], messages: Iterable[Message]) -> None:
        """Context messages appended to OUT as content blocks; tool results go in user
        messages."""
        _extend(out, messages)

    def body(
        self, request: TurnRequest, system: str, messages: list[dict[str, object]],
        tools: list[Tool]) -> _Body:
        """Model, system, messages, tools, ``stream: true`` (and thinking if configured)."""
        body: _Body = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": _with_cache_mark(messages) if self.prompt_cache else messages,
            "stream": True,
        }
        if system:
            body["system"] = (
                [{"type": "text", "text": system, "cache_control": EPHEMERAL}]
                if self.prompt_cache
                else system
            )
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.schema()}
                for t in tools
            ]
        if self.thinking_budget and self.thinking_budget < request.max_tokens:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        return body

    async def parse(self, events: AsyncIterator[ServerSentEvent], sink: TurnSink,
                    input_limit: int = MAX_TOOL_INPUT) -> StepResult:
        """Handle ``message_start`` … ``message_stop``; thinking blocks keep their signature."""
        step = StepResult()
        blocks: dict[int, dict[str, Any]] = {}
        # Streamed pieces per (block index, field), joined once at the end.
        partial: dict[tuple[int, str], list[str]] = {}
        budget = InputBudget(input_limit)
        inputs: dict[int, StreamedInput] = {}
        """Tool input JSON per block index, bounded as it streams."""
        finished = False
        async for sse in events:
            if not sse.data:
                continue
            try:
                ev = json.loads(sse.data)
            except ValueError as exc:
                raise ProviderError(f"malformed stream event: {sse.data[:200]}") from exc
            kind = ev.get("type", sse.event)
            if kind == "message_start":
                usage = (ev.get("message") or {}).get("usage") or {}
                step.usage.input_tokens += int(usage.get("input_tokens") or 0)
                step.usage.cache_read_tokens += int(usage.get("cache_read_input_tokens") or 0)
                step.usage.cache_write_tokens += int(usage.get("cache_creation_input_tokens") or 0)
            elif kind == "content_block_start":
                idx = int(ev.get("index", len(blocks)))
                _room(blocks, idx)
                blocks[idx] = dict(ev.get("content_block") or {})
            elif kind == "content_block_delta":
                idx = int(ev.get("index", 0))
                _room(blocks, idx)
                delta = ev.get("delta") or {}
                if delta.get("type") == "input_json_delta":
                    got = inputs.get(idx)
                    if got is None:
                        got = inputs[idx] = StreamedInput(budget)
                    got.add(str(delta.get("partial_json", "")))
                    blocks.setdefault(idx, {"type": "text", "text": ""})
                else:
                    self._delta(idx, delta, blocks, partial, sink, step)
            elif kind == "message_delta":
                step.stop_reason = (ev.get("delta") or {}).get("stop_reason") or step.stop_reason
                step.usage.output_tokens = int((ev.get("usage") or {}).get("output_tokens") or 0)
            elif kind == "message_stop":
                finished = True
                break
            elif kind == "error":
                err = ev.get("error") or {}
                raise ProviderError(
                    f"{err.get('type', 'error')}: {err.get('message', sse.data[:200])}"
                )
        if not finished:
            raise ProviderError("stream broken: it ended before message_stop")
        content: list[dict[str, object]] = []
        for idx in sorted(blocks):
            block = blocks[idx]
            for key in _STREAMED:
                if (idx, key) in partial:
                    block[key] = str(block.get(key) or "") + "".join(partial[idx, key])
            if block.get("type") == "tool_use":
                streamed = inputs.get(idx)
                args = (streamed.value() if streamed is not None and streamed.size
                        else checked_tool_input(block.get("input") or {}))
                block["input"] = args
                step.tool_calls.append(ToolCallRef(id=block["id"], name=block["name"], input=args))
            elif block.get("type") == "text" and not block.get("text"):
                continue
            elif block.get("type") == "thinking" and not block.get("signature"):
                continue  # the API refuses an unsigned thinking block sent back
            content.append(block)
        step.assistant = {"role": "assistant", "content": content}
        return step

    @staticmethod
    def _delta(
        idx: int,
        delta: dict[str, Any],
        blocks: dict[int, dict[str, Any]],
        partial: dict[tuple[int, str], list[str]],
        sink: TurnSink,
        step: StepResult,
    ) -> None:
        blocks.setdefault(idx, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            piece = str(delta.get("text", ""))
            partial.setdefault((idx, "text"), []).append(piece)
            step.text_parts.append(piece)
            sink.text(piece)
        elif kind == "thinking_delta":
            piece = str(delta.get("thinking", ""))
            partial.setdefault((idx, "thinking"), []).append(piece)
            sink.reasoning(piece)
        elif kind == "signature_delta":
            partial.setdefault((idx, "signature"), []).append(str(delta.get("signature", "")))

    def tool_results(self, outcomes: list[ToolOutcome]) -> list[dict[str, object]]:
        """One user message with a ``tool_result`` block per call."""
        return [
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": o.call_id,
                        "content": o.output,
                        "is_error": o.is_error,
                    }
                    for o in outcomes
                ],
            }
        ]

    def error_message(self, status: int, body: str) -> str:
        """``error.message`` of the Anthropic error envelope (or the raw body)."""
        try:
            err = json.loads(body).get("error") or {}
            return f"{err.get('type', 'error')}: {err.get('message', '')}".strip()
        except (ValueError, AttributeError):
            return body.strip()[:500] or f"status {status}"
