"""The native agent loop shared by the OpenAI-compatible and Anthropic providers.

One turn: send the context → stream the answer into the sink → run the tool
calls it asks for (asking permission as the mode says) → send the results →
loop, until the model answers without tool calls. Guidance the user gives the
running turn (``turns/steer``) joins the next request as a user message.
Each HTTP request is retried a bounded number of times on 429 (honouring
``retry-after``), 5xx and connection failures, but only while nothing of it
reached the sink; a stream that breaks after output began fails the turn with
the provider's message. Cancellation ends the turn as ``aborted``.

The wire formats live in `tandem.providers.openai` and
`tandem.providers.anthropic` as `Wire` implementations.
"""

from __future__ import annotations

import email.utils
import ssl
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
from httpx_sse import EventSource, ServerSentEvent

from tandem.capped import cap
from tandem.editor import EditorBridge
from tandem.providers.base import (
    Conversation,
    Message,
    ToolCallRef,
    ToolSource,
    TurnRequest,
    TurnResult,
    TurnSink,
    Usage,
)
from tandem.providers.credentials import Credentials
from tandem.providers.tool_input import MAX_TOOL_INPUT
from tandem.providers.wire_context import WireContext, complete_tool_pairs, encode_body
from tandem.tools.base import Tool, ToolContext
from tandem.tools.executor import ToolExecutor, ToolOutcome, default_tools
from tandem.tools.permissions import SessionGrants

DEFAULT_SYSTEM = (
    "You are a coding agent working in the project at {root}. Use the tools to read, "
    "search and change files there (paths are relative to that folder) and to run shell "
    "commands. Make the smallest change that does what the user asks, then say briefly "
    "what you did."
)


class ProviderError(Exception):
    """A request failed; MESSAGE is the provider's own explanation."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass
class StepResult:
    """One model response of the loop, parsed from the stream."""

    text_parts: list[str] = field(default_factory=list)
    """Streamed text pieces: appended, joined once (a ``str +=`` on an
    attribute copies the whole answer per delta, quadratic in its length)."""
    tool_calls: list[ToolCallRef] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    assistant: dict[str, object] = field(default_factory=dict)
    """The response as a wire-format assistant message, to send back next step."""

    @property
    def text(self) -> str:
        """The text streamed so far, as one string."""
        return "".join(self.text_parts)


class Wire(ABC):
    """One HTTP API's request and stream format."""

    takes_images = True
    """Whether a user message's images go as image content (`Message.images`)."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials

    @abstractmethod
    def url(self) -> str:
        """The streaming endpoint."""

    @abstractmethod
    def headers(self) -> dict[str, str]:
        """Request headers (authentication included)."""

    @abstractmethod
    def extend_messages(self, out: list[dict[str, object]], messages: Iterable[Message]) -> None:
        """Append the provider-neutral MESSAGES to OUT in wire format.

        A left fold: each message's dicts depend only on it and on OUT's last
        dict, which may be replaced by a merged copy, never changed in place
        (`WireContext` keeps a converted context between turns).
        """

    def initial_messages(self, messages: Iterable[Message]) -> list[dict[str, object]]:
        """The provider-neutral context in wire format (the full conversion)."""
        out: list[dict[str, object]] = []
        self.extend_messages(out, messages)
        return out

    @abstractmethod
    def body(
        self, request: TurnRequest, system: str, messages: list[dict[str, object]],
        tools: list[Tool]) -> Mapping[str, object]:
        """The JSON body of one streaming request (each format's own `TypedDict`)."""

    @abstractmethod
    async def parse(self, events: AsyncIterator[ServerSentEvent], sink: TurnSink,
                    input_limit: int = MAX_TOOL_INPUT) -> StepResult:
        """Consume the SSE stream, streaming text and reasoning into SINK.

        Tool input past INPUT_LIMIT bytes (all calls of the response together)
        is dropped as it arrives; the call becomes an invalid-input marker.
        """

    @abstractmethod
    def tool_results(self, outcomes: list[ToolOutcome]) -> list[dict[str, object]]:
        """Wire messages carrying the tool results back to the model."""

    @abstractmethod
    def error_message(self, status: int, body: str) -> str:
        """The provider's message out of an error response BODY."""


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _Watch:
    """A sink wrapper that notes whether any output reached the real sink."""

    def __init__(self, sink: TurnSink) -> None:
        self.sink = sink
        self.started = False
        self.text = False

    def text_delta(self, delta: str) -> None:
        self.started = self.text = True
        self.sink.text(delta)

    def reasoning_delta(self, delta: str) -> None:
        self.started = self.text = True
        self.sink.reasoning(delta)


class _SinkView:
    """What a `Wire` parser sees: text and reasoning only, counted by `_Watch`."""

    def __init__(self, watch: _Watch) -> None:
        self._watch = watch

    def text(self, delta: str) -> None:
        if delta:
            self._watch.text_delta(delta)

    def reasoning(self, delta: str) -> None:
        if delta:
            self._watch.reasoning_delta(delta)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._watch.sink, name)


@dataclass
class LoopLimits:
    """Bounds of the loop: retries, waits, steps, timeouts, tool limits."""

    max_retries: int = 3
    backoff: float = 0.5
    """First retry delay for 5xx and connection errors; doubles each time."""
    max_retry_wait: float = 60.0
    """A ``retry-after`` longer than this fails the turn instead of waiting."""
    max_steps: int = 50
    connect_timeout: float = 15.0
    read_timeout: float = 300.0
    """Longest silence allowed inside a stream."""
    shell_timeout: float = 120.0
    tool_timeout: float = 30.0
    """Time budget of one file tool call (walk, read, grep, write)."""
    output_cap: int = 64 * 1024
    max_tool_input_bytes: int = MAX_TOOL_INPUT
    """Tool input one model response may stream; past it the call fails by name."""

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name} must be a number >= 0, not {value!r}")
        for name in ("max_steps", "connect_timeout", "read_timeout", "shell_timeout",
                     "tool_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if self.output_cap < 256:
            raise ValueError("output_cap must be at least 256 bytes")
        if self.max_tool_input_bytes < 1024:
            raise ValueError("max_tool_input_bytes must be at least 1024 bytes")


def tls_for(url: str) -> ssl.SSLContext | bool:
    """What the client to URL verifies TLS with: the trust store (True), as usual.

    For an ``http://`` URL (a local model server) no TLS connection is ever
    made — the client only requests that URL and follows no redirect — so
    loading the CA bundle (~25 ms, the largest single cost of a local turn's
    start-up) is skipped: the context given instead verifies certificates and
    host names and trusts nothing, so a TLS connection through it fails
    rather than going unverified.
    """
    if urlsplit(url).scheme != "http":
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED, check_hostname


def take_steers(sink: TurnSink) -> list[str]:
    """The guidance SINK holds for the next model request (``take_steers``), or none:
    a sink that takes no guidance (a compaction's, a test's) has no such method."""
    take = getattr(sink, "take_steers", None)
    return list(take()) if take is not None else []


class NativeProvider:
    """A `Provider` running tandem's own agent loop over one `Wire`."""

    accepts_steering = True
    """Guidance given mid-turn goes with the loop's next model request (`take_steers`)."""

    conversation: Conversation | None = None
    """Native providers keep no conversation: the projection is sent each turn."""
    conversation_id: str | None = None
    """Always None (see `conversation`)."""

    def reset_conversation(self, conversation_id: str | None = None) -> None:
        """Nothing to reset: each turn sends the projection afresh."""

    async def image_refusal(self, root: Path) -> str | None:
        """None when the wire format carries images (both built-in ones do)."""
        if self.wire.takes_images:
            return None
        return (f"{self.name} cannot take images in a request: send the text alone, "
                "or choose a provider that takes images")

    def __init__(
        self,
        name: str,
        wire: Wire,
        *,
        limits: LoopLimits | None = None,
        grants: SessionGrants | None = None,
        tools: list[Tool] | None = None,
        default_model: str = "",
        tool_source: ToolSource | None = None,
        editor: EditorBridge | None = None,
    ) -> None:
        self.name = name
        self.editor = editor
        """The user's editor, which the editor tools ask (None: they need Emacs)."""
        self.default_model = default_model
        self.wire = wire
        self.limits = limits or LoopLimits()
        self.grants = grants
        self.tools = tools
        self.tool_source = tool_source
        """More tools per turn (the session's MCP servers); its error fails the turn."""
        self._client: httpx.AsyncClient | None = None
        self._context = WireContext(wire.extend_messages)
        """The last chat context sent, converted: the next turn converts only what is new."""

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            lim = self.limits
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(lim.read_timeout, connect=lim.connect_timeout),
                trust_env=True,  # HTTPS_PROXY, NO_PROXY, SSL_CERT_FILE as usual
                verify=tls_for(self.wire.url()),
            )
        return self._client

    async def close(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def run(self, request: TurnRequest, sink: TurnSink) -> TurnResult:
        """Run one turn of the agent loop; see the module docstring."""
        if not request.model:
            if not self.default_model:
                return TurnResult(outcome="failed", error=f"{self.name}: no model given")
            request = request.model_copy(update={"model": self.default_model})
        if not request.root.is_dir():
            return TurnResult(outcome="failed", error=f"workspace root {request.root} is missing")
        ctx = ToolContext(
            root=request.root,
            shell_timeout=self.limits.shell_timeout,
            output_cap=self.limits.output_cap,
            tool_timeout=self.limits.tool_timeout,
            protected_paths=request.protected_paths,
            editor=self.editor,
        )
        tools = self.tools if self.tools is not None else default_tools()
        if self.tool_source is not None:
            try:
                tools = [*tools, *await self.tool_source(request)]
            except anyio.get_cancelled_exc_class():
                return TurnResult(outcome="aborted", error="cancelled")
            except Exception as exc:  # a named error (which server, why), never a hang
                return TurnResult(outcome="failed", error=self._scrub(str(exc)))
        executor = ToolExecutor(request, sink, ctx, tools, self.grants, self._scrub)
        system = request.system or DEFAULT_SYSTEM.format(root=request.root)
        if request.instructions:  # text for the model, never configuration
            system = f"{system}\n\n{request.instructions}"
        # A directive's isolated prompt is converted apart: the chat's kept context stays.
        wire_messages = (self.wire.initial_messages(complete_tool_pairs(request.messages))
                         if request.isolated else self._context.wire_messages(request.messages))
        usage = Usage()
        watch = _Watch(sink)
        current: list[str] = []

        def result(outcome: str, error: str | None = None) -> TurnResult:
            return TurnResult.model_validate(
                {
                    "outcome": outcome,
                    "error": self._scrub(error) if error else None,
                    "usage": usage,
                    "ran_shell": bool(ctx.ran_shell),
                }
            )

        try:
            for _ in range(self.limits.max_steps):
                # Guidance the user gave meanwhile goes as user messages with this request.
                steers = take_steers(sink)
                if steers:
                    self.wire.extend_messages(
                        wire_messages, [Message(role="user", text=t) for t in steers])
                watch.text = False
                step = await self._step_with_retries(
                    request, system, wire_messages, executor.specs(), watch
                )
                usage.add(step.usage)
                if watch.text:
                    sink.end_message()
                    watch.text = False
                wire_messages.append(step.assistant)
                if not step.tool_calls:
                    return result("succeeded")
                outcomes = []
                for call in step.tool_calls:
                    current[:] = [call.id]
                    outcomes.append(await executor.run(call.id, call.name, call.input))
                    current.clear()
                wire_messages.extend(self.wire.tool_results(outcomes))
            return result("failed", f"stopped after {self.limits.max_steps} model requests")
        except ProviderError as exc:
            if watch.text:
                sink.end_message()
            return result("failed", exc.message)
        except anyio.get_cancelled_exc_class():
            # Keep what was shown, close the open tool call, and end as aborted.
            if watch.text:
                sink.end_message()
            for call_id in current:
                sink.tool_result(call_id, "failed", "cancelled")
            return result("aborted", "cancelled")
        except Exception as exc:  # the turn must still end through the one terminal path
            if watch.text:
                sink.end_message()
            for call_id in current:
                sink.tool_result(call_id, "failed", f"internal error: {exc}")
            return result("failed", f"internal error: {type(exc).__name__}: {exc}")

    def _scrub(self, text: str) -> str:
        key = self.wire.credentials.key()
        return text.replace(key, "***") if key else text

    async def _step_with_retries(
        self,
        request: TurnRequest,
        system: str,
        messages: list[dict[str, object]],
        tools: list[Tool],
        watch: _Watch,
    ) -> StepResult:
        attempt = 0
        while True:
            watch.started = False
            try:
                return await self._step(request, system, messages, tools, watch)
            except ProviderError as exc:
                if not exc.retryable or watch.started or attempt >= self.limits.max_retries:
                    if exc.retryable and attempt and not watch.started:
                        exc.message += f" (after {attempt + 1} attempts)"
                    raise
                wait = exc.retry_after
                if wait is None:
                    wait = self.limits.backoff * (2**attempt)
                if wait > self.limits.max_retry_wait:
                    exc.message += f" (retry-after {wait:g} s is longer than we wait)"
                    raise
                attempt += 1
                await anyio.sleep(wait)

    async def _step(
        self,
        request: TurnRequest,
        system: str,
        messages: list[dict[str, object]],
        tools: list[Tool],
        watch: _Watch,
    ) -> StepResult:
        # The body holds the whole context (~0.5 MB at turn 1,000): pydantic-core's
        # encoder writes it ~3x faster than the json module (httpx's ``json=``), and
        # the kept context's messages are encoded once, not at every step.
        content = encode_body(self.wire.body(request, system, messages, tools),
                              self._context.fragment)
        headers = {**self.wire.headers(), "content-type": "application/json"}
        try:
            async with self._http().stream(
                "POST", self.wire.url(), content=content, headers=headers
            ) as resp:
                if resp.status_code >= 400:
                    raw = (await resp.aread()).decode("utf-8", "replace")
                    status = resp.status_code
                    raise ProviderError(
                        f"HTTP {status}: {self.wire.error_message(status, raw)}",
                        status=status,
                        retryable=status in (408, 409, 429) or status >= 500,
                        retry_after=parse_retry_after(resp.headers),
                    )
                ctype = resp.headers.get("content-type", "")
                if "text/event-stream" not in ctype:
                    raw = (await resp.aread()).decode("utf-8", "replace")[:300]
                    raise ProviderError(f"expected an event stream, got {ctype!r}: {raw}")
                # One event may carry a whole call's input (escaped once more): bound
                # each event while it is received, not only what the parser keeps.
                event_limit = 2 * self.limits.max_tool_input_bytes + (1 << 16)
                cap(resp, event_limit, lambda: ProviderError(
                    f"{self.name}: one stream event is over {event_limit:,} bytes (twice "
                    "native.max_tool_input_bytes); the stream was dropped as it arrived"))
                view: Any = _SinkView(watch)
                return await self.wire.parse(EventSource(resp).aiter_sse(), view,
                                             self.limits.max_tool_input_bytes)
        except httpx.TimeoutException as exc:
            raise ProviderError(
                f"{self.name}: request timed out ({type(exc).__name__})", retryable=True
            ) from exc
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
            what = "stream broken" if watch.started else "connection failed"
            raise ProviderError(f"{what}: {exc}", retryable=True) from exc
        except httpx.HTTPError as exc:
            raise ProviderError(f"{self.name}: {exc}") from exc
