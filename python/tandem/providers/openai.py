"""Native provider over an OpenAI-compatible chat completions API (SSE).

Works with any base URL that speaks ``POST {base}/chat/completions``: OpenAI,
a local llama.cpp or vLLM server, OpenRouter. Reasoning arrives as
``delta.reasoning_content`` (DeepSeek, vLLM, llama.cpp) or ``delta.reasoning``
(OpenRouter); both are streamed as reasoning.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Literal, Required, TypedDict
from urllib.parse import urlsplit

from httpx_sse import ServerSentEvent

from tandem.providers.base import Message, ToolCallRef, TurnRequest, TurnSink, image_marker
from tandem.providers.native import ProviderError, StepResult, Wire
from tandem.providers.tool_input import (
    MAX_CALLS,
    MAX_TOOL_INPUT,
    NAME_KEPT,
    InputBudget,
    StreamedInput,
    kept_name,
)
from tandem.tools.base import Tool
from tandem.tools.executor import ToolOutcome


def _extend(out: list[dict[str, object]], messages: Iterable[Message]) -> None:
    """Append MESSAGES in wire form to OUT: one dict per message (an empty assistant none)."""
    for m in messages:
        if m.role == "user":
            if m.images:  # content parts: the text, then each image as a data URL
                out.append({"role": "user", "content": _parts(m)})
            else:
                out.append({"role": "user", "content": m.text})
        elif m.role == "assistant":
            msg: dict[str, object] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {
                        "id": t.id,
                        "type": "function",
                        "function": {"name": t.name, "arguments": json.dumps(t.input)},
                    }
                    for t in m.tool_calls
                ]
            elif not m.text:
                continue
            out.append(msg)
        else:
            out.append({"role": "tool", "tool_call_id": m.call_id, "content": m.text})


def _parts(m: Message) -> list[dict[str, object]]:
    """User message M as content parts: its text, then an ``image_url`` part with a base64
    data URL per image (a text part for an image without bytes)."""
    parts: list[dict[str, object]] = [{"type": "text", "text": m.text}] if m.text else []
    for image in m.images:
        parts.append({"type": "image_url",
                      "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}
                     if image.data else {"type": "text", "text": image_marker(image)})
    return parts


class _Function(TypedDict):
    """A tool as the model sees it: name, description, the JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, object]


class _ToolDefinition(TypedDict):
    """One entry of a request's ``tools``."""

    type: Literal["function"]
    function: _Function


class _Body(TypedDict, total=False):
    """The body of one streaming chat completion request (its limit under one name)."""

    model: Required[str]
    messages: Required[list[dict[str, object]]]
    stream: Required[bool]
    stream_options: Required[dict[str, bool]]
    max_completion_tokens: int
    max_tokens: int
    tools: list[_ToolDefinition]


class _Call(TypedDict):
    """One tool call as its fragments stream in: id, name, the bounded arguments."""

    id: str
    name: str
    arguments: StreamedInput


class OpenAIWire(Wire):
    """Request and stream format of OpenAI-compatible chat completions."""

    def url(self) -> str:
        """``{base}/chat/completions`` (the base includes ``/v1``)."""
        return f"{self.credentials.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        """``Authorization: Bearer`` when there is a key (local servers may need none)."""
        key = self.credentials.key()
        headers = {"accept": "text/event-stream"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        return headers

    def extend_messages(self, out: list[dict[str, object]], messages: Iterable[Message]) -> None:
        """Context messages appended to OUT; tool results become ``role: tool`` messages."""
        _extend(out, messages)

    def body(
        self, request: TurnRequest, system: str, messages: list[dict[str, object]],
        tools: list[Tool]) -> _Body:
        """Model, messages (system first), tools, ``stream: true`` with usage."""
        msgs: list[dict[str, object]] = [{"role": "system", "content": system}] if system else []
        msgs += messages
        body: _Body = {
            "model": request.model,
            "messages": msgs,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # OpenAI's own API renamed the limit for newer models; compatible servers
        # (llama.cpp, vLLM, OpenRouter) still read max_tokens.
        host = urlsplit(self.credentials.base_url).hostname or ""
        if host.endswith("openai.com"):
            body["max_completion_tokens"] = request.max_tokens
        else:
            body["max_tokens"] = request.max_tokens
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.schema(),
                    },
                }
                for t in tools
            ]
        return body

    async def parse(self, events: AsyncIterator[ServerSentEvent], sink: TurnSink,
                    input_limit: int = MAX_TOOL_INPUT) -> StepResult:
        """Handle ``chat.completion.chunk`` events up to ``[DONE]``."""
        step = StepResult()
        calls: dict[int, _Call] = {}
        budget = InputBudget(input_limit)
        done = False
        async for sse in events:
            data = sse.data.strip()
            if not data:
                continue
            if data == "[DONE]":
                done = True
                break
            try:
                chunk = json.loads(data)
            except ValueError as exc:
                raise ProviderError(f"malformed stream chunk: {data[:200]}") from exc
            if chunk.get("error"):
                err = chunk["error"]
                msg = err.get("message", str(err)) if isinstance(err, dict) else str(err)
                raise ProviderError(f"stream error: {msg}")
            usage = chunk.get("usage")
            if isinstance(usage, dict):
                # prompt_tokens includes the cached part; keep the two apart.
                details = usage.get("prompt_tokens_details")
                cached = int((details or {}).get("cached_tokens") or 0) if isinstance(
                    details, dict) else 0
                step.usage.input_tokens = max(0, int(usage.get("prompt_tokens") or 0) - cached)
                step.usage.cache_read_tokens = cached
                step.usage.output_tokens = int(usage.get("completion_tokens") or 0)
            for choice in chunk.get("choices") or []:
                self._choice(choice, calls, sink, step, budget)
        if not done and step.stop_reason is None:
            raise ProviderError("stream broken: it ended before a finish_reason or [DONE]")
        for n, index in enumerate(sorted(calls)):
            call = calls[index]
            args = call["arguments"].value()
            step.tool_calls.append(
                ToolCallRef(id=call["id"] or f"call_{n}", name=call["name"], input=args)
            )
        assistant: dict[str, object] = {"role": "assistant", "content": step.text or None}
        if step.tool_calls:
            assistant["tool_calls"] = [
                {
                    "id": t.id,
                    "type": "function",
                    "function": {"name": t.name, "arguments": json.dumps(t.input)},
                }
                for t in step.tool_calls
            ]
        step.assistant = assistant
        return step

    @staticmethod
    def _choice(
        choice: dict[str, Any], calls: dict[int, _Call], sink: TurnSink,
        step: StepResult, budget: InputBudget,
    ) -> None:
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if content:
            step.text_parts.append(content)
            sink.text(content)
        thought = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(thought, str) and thought:
            sink.reasoning(thought)
        for frag in delta.get("tool_calls") or []:
            index = int(frag.get("index", len(calls)))
            call = calls.get(index)
            if call is None:
                if len(calls) >= MAX_CALLS:
                    raise ProviderError(f"the model sent more than {MAX_CALLS} tool calls in "
                                        "one response")
                call = calls[index] = {"id": "", "name": "", "arguments": StreamedInput(budget)}
            if frag.get("id"):
                call["id"] = str(frag["id"])[:NAME_KEPT]
            fn = frag.get("function") or {}
            if fn.get("name"):
                call["name"] = kept_name(call["name"], str(fn["name"]))
            if fn.get("arguments"):
                call["arguments"].add(str(fn["arguments"]))
        if choice.get("finish_reason"):
            step.stop_reason = choice["finish_reason"]

    def tool_results(self, outcomes: list[ToolOutcome]) -> list[dict[str, object]]:
        """One ``role: tool`` message per call."""
        return [{"role": "tool", "tool_call_id": o.call_id, "content": o.output} for o in outcomes]

    def error_message(self, status: int, body: str) -> str:
        """``error.message`` of the OpenAI error envelope (or the raw body)."""
        try:
            err = json.loads(body).get("error")
            if isinstance(err, dict):
                return str(err.get("message") or err)
            if err:
                return str(err)
        except (ValueError, AttributeError):
            pass
        return body.strip()[:500] or f"status {status}"
