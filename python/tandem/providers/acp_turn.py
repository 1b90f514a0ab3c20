"""One ACP prompt turn: maps the agent's session updates and permission
requests onto `TurnSink` calls, and collects what the turn result reports.

ACP agents announce a tool call before its input is known (the Claude adapter
sends the input in later ``tool_call_update``s, newer versions piece by piece),
so a call is reported to the sink when its permission is asked, when it
reports progress, when the agent moves on to text or a plan, or when the turn
ends, whichever comes first, with the latest input. The journal gets one
complete ``tool_call`` entry per call, always before its result or permission
question.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    ContentToolCallContent,
    DeniedOutcome,
    FileEditToolCallContent,
    PermissionOption,
    PromptResponse,
    RequestPermissionResponse,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

from tandem.providers.acp_protect import reason_for
from tandem.providers.base import (
    Outcome,
    PermissionAnswer,
    PermissionRequest,
    ToolKind,
    TurnRequest,
    TurnResult,
    TurnSink,
    Usage,
)
from tandem.tools.protected import question

log = logging.getLogger(__name__)

TerminalText = Callable[[str], "str | None"]
"""The output of a terminal tandem runs, by id (None: not one of tandem's)."""

OUTPUT_LIMIT = 100_000
"""Characters of one tool result kept (the rest is summarised)."""

_KINDS: dict[str, ToolKind] = {
    "read": "read",
    "search": "read",
    "edit": "edit",
    "delete": "edit",
    "move": "edit",
    "execute": "execute",
}
_PATH_KEYS = ("file_path", "path", "notebook_path")
_MOVING = ("in_progress", "completed", "failed")
"""Statuses after which a call's input is final."""


def tandem_kind(acp_kind: str | None) -> ToolKind:
    """tandem's capability class of an ACP tool kind."""
    return _KINDS.get(acp_kind or "", "other")


def choose_option(options: list[PermissionOption], answer: PermissionAnswer) -> str | None:
    """The agent's option id that carries ANSWER, or None when it offers none.

    ``allow_session`` prefers the agent's ``allow_always`` (Claude Code scopes
    it to the session); ``allow_once`` falls back to ``allow_always`` only when
    the agent offers nothing narrower, since the user did allow the call.
    """
    preferences = {
        "allow_once": ("allow_once", "allow_always"),
        "allow_session": ("allow_always", "allow_once"),
        "reject": ("reject_once", "reject_always"),
    }[answer]
    for kind in preferences:
        for option in options:
            if option.kind == kind:
                return option.option_id
    return None


def _text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [_text_of(v) for v in value]
        return "\n".join(p for p in parts if p)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return str(value["text"])
        if "content" in value:
            return _text_of(value["content"])
    return json.dumps(value, ensure_ascii=False, default=str)


def _content_text(
    update: ToolCallStart | ToolCallUpdate, terminal_text: TerminalText | None = None
) -> str:
    parts: list[str] = []
    for item in update.content or []:
        if isinstance(item, ContentToolCallContent) and isinstance(item.content, TextContentBlock):
            parts.append(item.content.text)
        elif isinstance(item, FileEditToolCallContent):
            parts.append(f"edited {item.path}")
        elif isinstance(item, TerminalToolCallContent):
            # A terminal tandem runs: its output, as the native shell tool shows it.
            shown = terminal_text(item.terminal_id) if terminal_text else None
            parts.append(shown if shown is not None else f"terminal {item.terminal_id}")
    return "\n".join(parts)


def _clip(text: str) -> str:
    if len(text) <= OUTPUT_LIMIT:
        return text
    return text[:OUTPUT_LIMIT] + f"\n[… {len(text) - OUTPUT_LIMIT} characters omitted]"


@dataclass
class _Call:
    """What is known of one tool call."""

    call_id: str
    name: str
    kind: ToolKind
    title: str
    input: dict[str, object] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)
    reported: bool = False
    finished: bool = False
    refused: bool = False
    allowed: bool = False
    """A permission question about it was answered with an allow."""
    terminal: str | None = None
    """The terminal that runs it (execute-class calls whose agent asked tandem for one)."""
    protected: set[Path] = field(default_factory=set)
    """Protected paths (resolved) the user allowed this call to write, once each."""


class AcpTurn:
    """The state of one ``session/prompt`` while it runs."""

    def __init__(self, request: TurnRequest, sink: TurnSink,
                 grants: set[str] | None = None) -> None:
        self.request = request
        self.sink = sink
        self.grants = grants if grants is not None else set()
        """Edit tools the user allowed for the session: tandem answers them itself, the
        agent never gets an "always" (it would stop asking, protected paths included)."""
        self.calls: dict[str, _Call] = {}
        self._message_open = False
        self._message_id: str | None = None
        self._asks: set[asyncio.Task[PermissionAnswer]] = set()
        self.cancelled = False
        self.permission_requests = 0
        self.auto_rejected = 0
        self.failure: str | None = None
        self.failed = asyncio.Event()
        """Set by `fail`: the turn must end now, as failed."""
        self.terminal_text: TerminalText | None = None
        """Set by the client: the output of its terminals, for tool rows."""
        self._terminal_calls = 0

    @property
    def read_only(self) -> bool:
        """Whether nothing may change in this turn (a discussion, or read-only mode)."""
        return self.request.read_only or self.request.permission_mode == "read-only"

    # -- session/update ------------------------------------------------

    def on_update(self, update: Any) -> None:
        """Report one ``session/update`` payload to the sink."""
        if isinstance(update, AgentMessageChunk | AgentThoughtChunk):
            self._report_pending()
            self._chunk(update)
        elif isinstance(update, ToolCallStart):
            self._tool_start(update)
        elif isinstance(update, ToolCallProgress):
            self._tool_progress(update)
        elif isinstance(update, AgentPlanUpdate):
            self._report_pending()
            self.sink.plan([e.model_dump(mode="json", exclude_none=True) for e in update.entries])
        # user_message_chunk (history replay), mode, command and usage updates
        # carry nothing the journal records: the usage totals come with the
        # prompt response.

    def _chunk(self, update: AgentMessageChunk | AgentThoughtChunk) -> None:
        if not isinstance(update.content, TextContentBlock) or not update.content.text:
            return
        if update.message_id and self._message_id and update.message_id != self._message_id:
            self.end_message()
        self._message_id = update.message_id or self._message_id
        self._message_open = True
        if isinstance(update, AgentMessageChunk):
            self.sink.text(update.content.text)
        else:
            self.sink.reasoning(update.content.text)

    def end_message(self) -> None:
        """Close the assistant message being streamed, if any."""
        if self._message_open:
            self._message_open = False
            self.sink.end_message()

    def _tool_start(self, update: ToolCallStart) -> None:
        self.end_message()
        call = self.calls.get(update.tool_call_id)
        if call is None:
            call = _Call(
                call_id=update.tool_call_id,
                name=self._tool_name(update),
                kind=tandem_kind(update.kind),
                title=update.title,
            )
            self.calls[call.call_id] = call
        self._learn(call, update)
        if update.status in _MOVING:
            self._report(call)
        self._maybe_finish(call, update)

    def _tool_progress(self, update: ToolCallUpdate) -> None:
        call = self.calls.get(update.tool_call_id)
        if call is None:
            # An update for a call never announced: treat it as its start.
            self.end_message()
            call = _Call(
                call_id=update.tool_call_id,
                name=self._tool_name(update),
                kind=tandem_kind(update.kind),
                title=update.title or update.tool_call_id,
            )
            self.calls[call.call_id] = call
        self._learn(call, update)
        if update.status in _MOVING:
            self._report(call)
        self._maybe_finish(call, update)

    def _report_pending(self) -> None:
        """The agent moved on to text or a plan: the calls it announced are complete."""
        for call in self.calls.values():
            self._report(call)

    @staticmethod
    def _tool_name(update: ToolCallStart | ToolCallUpdate) -> str:
        meta = update.field_meta or {}
        claude = meta.get("claudeCode") if isinstance(meta, dict) else None
        if isinstance(claude, dict) and isinstance(claude.get("toolName"), str):
            return str(claude["toolName"])
        return update.title or update.kind or "tool"

    def _learn(self, call: _Call, update: ToolCallStart | ToolCallUpdate) -> None:
        if update.title and not call.reported:
            call.title = update.title
        if update.kind and not call.reported:
            call.kind = tandem_kind(update.kind)
        name = self._tool_name(update)
        if name and not call.reported and update.field_meta:
            call.name = name
        if isinstance(update.raw_input, dict) and update.raw_input and not call.reported:
            call.input = dict(update.raw_input)
        for location in update.locations or []:
            call.paths.add(location.path)
        for key in _PATH_KEYS:
            value = call.input.get(key)
            if isinstance(value, str) and value:
                call.paths.add(value)

    def _report(self, call: _Call) -> None:
        if not call.reported:
            call.reported = True
            self.sink.tool_call(call.call_id, call.name, call.kind, call.title, call.input)

    def _maybe_finish(self, call: _Call, update: ToolCallStart | ToolCallUpdate) -> None:
        if call.finished or update.status not in ("completed", "failed"):
            return
        call.finished = True
        output = _content_text(update, self.terminal_text) or _text_of(update.raw_output)
        status = "refused" if call.refused else str(update.status)
        self.sink.tool_result(call.call_id, status, _clip(output))

    def finish(self) -> None:
        """End of the turn: close the message, report calls still open."""
        self.end_message()
        for call in self.calls.values():
            self._report(call)
            if not call.finished:
                call.finished = True
                status = "refused" if call.refused else "failed"
                self.sink.tool_result(call.call_id, status, "no result: the turn ended first")

    # -- session/request_permission -------------------------------------

    async def on_permission(
        self, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        """Answer a permission request: by policy, or by asking the user."""
        self.permission_requests += 1
        self._tool_progress(tool_call.model_copy(update={"status": None}))
        call = self.calls[tool_call.tool_call_id]
        self._report(call)
        if self.cancelled:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        answer = await self._decide(call)
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        option = choose_option(options, answer)
        if answer == "reject":
            call.refused = True
        elif option is not None:
            call.allowed = True
        if option is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option)
        )

    async def allow_terminal(self, command: str) -> str | None:
        """Whether the agent may run COMMAND in a terminal now; raises
        `PermissionError` with the reason when not.

        The native shell tool's rules: refused in a read-only turn; allowed
        without a new question for the execute-class call the user (or the
        policy) just allowed; otherwise asked, as a tool row of its own, whose
        call id is returned (the caller reports its result).
        """
        if self.read_only:
            self.auto_rejected += 1
            raise PermissionError("refused: this turn is read-only (no command may run)")
        for call in self.calls.values():
            if call.kind == "execute" and call.allowed and not call.finished and not call.terminal:
                call.terminal = command
                return None
        self._terminal_calls += 1
        call = _Call(
            call_id=f"terminal-{self.request.turn}-{self._terminal_calls}",
            name="terminal",
            kind="execute",
            title=f"Run: {command[:80]}",
            input={"command": command},
        )
        self.calls[call.call_id] = call
        self.end_message()
        self._report(call)
        answer = None if self.cancelled else await self._decide(call)
        if answer is None or answer == "reject":
            call.refused = True
            call.finished = True
            self.sink.tool_result(call.call_id, "refused", "the user refused the command")
            raise PermissionError("refused: the user did not allow this command")
        call.allowed = True
        return call.call_id

    def terminal_done(self, call_id: str, status: str, output: str) -> None:
        """The terminal of the call CALL_ID (from `allow_terminal`) ended."""
        call = self.calls.get(call_id)
        if call is not None and not call.finished:
            call.finished = True
            self.sink.tool_result(call_id, status, _clip(output))

    async def _decide(self, call: _Call) -> PermissionAnswer | None:
        request = self.request
        if self.read_only:
            self.auto_rejected += 1
            return "reject"
        reason, call.protected = (await reason_for(request.root, call.paths,
                                                   request.protected_paths)
                                  if call.kind != "read" else (None, set()))
        if reason is None and call.kind == "edit" and (
                request.permission_mode == "auto-edit" or call.name in self.grants):
            return "allow_once"
        answer = await self._ask(PermissionRequest(
            call_id=call.call_id, tool=call.name, kind=call.kind, input=call.input,
            title=call.title if reason is None else question(call.title, reason),
            once_only=reason is not None))
        if answer == "allow_session" and (reason is not None or call.kind == "edit"):
            if reason is None:
                self.grants.add(call.name)
            return "allow_once"
        return answer

    async def allow_protected_write(self, real: Path, path: str, reason: str) -> bool:
        """Whether the agent's ``fs/write_text_file`` of PATH (REAL, protected for REASON)
        may go ahead: allowed by the question about its call, else asked now, once."""
        for call in self.calls.values():
            if call.allowed and real in call.protected:
                call.protected.discard(real)
                return True
        self._terminal_calls += 1
        call = _Call(call_id=f"write-{self.request.turn}-{self._terminal_calls}",
                     name="fs/write_text_file", kind="edit", title=f"Write {path}",
                     input={"path": path})
        self.calls[call.call_id] = call
        self.end_message()
        self._report(call)
        answer = None if self.cancelled else await self._ask(PermissionRequest(
            call_id=call.call_id, tool=call.name, kind=call.kind, input=call.input,
            title=question(call.title, reason), once_only=True))
        call.finished = True
        if answer in ("allow_once", "allow_session"):
            call.allowed = True
            self.sink.tool_result(call.call_id, "completed", f"allowed: {path}")
            return True
        call.refused = True
        self.sink.tool_result(call.call_id, "refused", f"the user refused the write ({reason})")
        return False

    async def _ask(self, asked: PermissionRequest) -> PermissionAnswer | None:
        """Ask the user ASKED; None when it was withdrawn (the turn is being cancelled)."""
        ask = asyncio.ensure_future(self.sink.ask_permission(asked))
        self._asks.add(ask)
        try:
            return await ask
        except asyncio.CancelledError:
            # The question was withdrawn (the turn engine cancels it on C-c C-c):
            # the agent must still get an answer, "cancelled". Only a cancel of
            # this handler itself (the connection closing) propagates.
            current = asyncio.current_task()
            if self.cancelled or current is None or not current.cancelling():
                return None
            raise
        finally:
            self._asks.discard(ask)

    def fail(self, message: str) -> None:
        """End the turn as failed with MESSAGE (the first failure wins)."""
        if self.failure is None:
            self.failure = message
            self.failed.set()
        self.cancel()

    def cancel(self) -> None:
        """The turn is being cancelled: withdraw open permission questions."""
        self.cancelled = True
        for ask in list(self._asks):
            ask.cancel()

    # -- what the turn result reports -------------------------------------

    def result(
        self, outcome: Outcome, error: str | None = None, response: PromptResponse | None = None
    ) -> TurnResult:
        """The turn's result: OUTCOME and ERROR, usage from RESPONSE, what tools did."""
        result = TurnResult(
            outcome=outcome,
            error=error,
            ran_shell=self.ran_shell(),
            wrote_outside=self.wrote_outside(self.request.root),
        )
        if response is not None and response.usage is not None:
            result.usage = Usage(
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
                cache_read_tokens=response.usage.cached_read_tokens or 0,
                cache_write_tokens=response.usage.cached_write_tokens or 0,
            )
        return result

    def outcome_of(self, response: PromptResponse) -> TurnResult:
        """The result of a prompt the agent answered, by its stop reason."""
        stop = response.stop_reason
        if stop == "end_turn":
            return self.result("succeeded", None, response)
        if stop == "cancelled":
            return self.result("aborted", "cancelled by the agent", response)
        return self.result("failed", f"the agent stopped: {stop}", response)

    def ran_shell(self) -> bool:
        """Whether an execute-class tool ran (it may have written anywhere)."""
        return any(
            c.kind == "execute" and c.finished and not c.refused for c in self.calls.values()
        )

    def wrote_outside(self, root: Path) -> list[str]:
        """Paths outside ROOT that edit-class tools reported touching."""
        base = root.resolve()
        outside: set[str] = set()
        for call in self.calls.values():
            if call.kind != "edit" or not call.finished or call.refused:
                continue
            for raw in call.paths:
                path = Path(raw) if Path(raw).is_absolute() else base / raw
                resolved = path.resolve()
                if resolved != base and base not in resolved.parents:
                    outside.add(str(resolved))
        return sorted(outside)
