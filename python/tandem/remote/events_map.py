"""Agent-server events → `TurnSink` calls: one pure mapping, no I/O.

An event is the JSON the server sends (``kind`` names its class). What the
turn needs to know besides the sink calls (the execution status, the actions
waiting for confirmation, the first error, token usage) is kept on
`EventMap` for the engine to read.

Server tools and tandem's capability classes: ``terminal`` runs commands
(execute); ``file_editor`` edits files, except its ``view`` command (read);
``task_tracker``, ``think`` and ``finish`` touch no file (read).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tandem.providers.base import ToolKind, TurnSink, Usage

OUTPUT_LIMIT = 100_000
"""Characters of one tool result kept (the rest is summarised)."""

ENDED = ("finished", "error", "stuck")
"""Execution statuses at which a turn ends."""

_READ_TOOLS = {"task_tracker", "think", "finish"}


def tool_kind(tool: str, action: Mapping[str, object]) -> ToolKind:
    """tandem's capability class of the server tool TOOL doing ACTION."""
    if tool in ("terminal", "bash", "execute_bash"):
        return "execute"
    if tool in ("file_editor", "str_replace_editor"):
        return "read" if action.get("command") == "view" else "edit"
    if tool in _READ_TOOLS:
        return "read"
    return "other"


def text_of(content: Any) -> str:
    """The text of a server content list (``[{"type": "text", "text": …}]``) or string."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content
                       if isinstance(c, dict) and c.get("type") == "text")
    return ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _clip(text: str) -> str:
    if len(text) <= OUTPUT_LIMIT:
        return text
    return text[:OUTPUT_LIMIT] + f"\n[… {len(text) - OUTPUT_LIMIT} characters omitted]"


def tool_input(action: Mapping[str, object]) -> dict[str, object]:
    """The tool row's input: the action's fields without the class tag, empty or false values."""
    return {k: v for k, v in action.items()
            if k != "kind" and v is not False and v not in (None, "", [], {})}


def edit_diff(action: Mapping[str, object]) -> str | None:
    """A unified diff of what a ``file_editor`` ACTION asks for (None: not an edit with text).

    ``str_replace`` replaces OLD_STR by NEW_STR; ``create`` writes FILE_TEXT;
    ``insert`` adds NEW_STR after line INSERT_LINE. The server's own before and
    after come with the observation; the row shows the request before it runs.
    """
    path = str(action.get("path") or "file")
    command = action.get("command")
    if command == "str_replace":
        old, new = str(action.get("old_str") or ""), str(action.get("new_str") or "")
    elif command == "create":
        old, new = "", str(action.get("file_text") or "")
    elif command == "insert":
        old, new = "", str(action.get("new_str") or "")
    else:
        return None
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 f"a{path}" if command != "create" else "/dev/null",
                                 f"b{path}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _title(tool: str, action: Mapping[str, object], summary: object) -> str:
    if tool in ("terminal", "bash", "execute_bash") and action.get("command"):
        return f"Run: {str(action['command'])[:80]}"
    if action.get("path"):
        return f"{action.get('command') or tool} {action['path']}"
    return str(summary or tool)


def usage_of(stats: Any) -> Usage:
    """Token totals of a ``stats`` value (summed over every LLM the conversation used)."""
    total = Usage()
    metrics = stats.get("usage_to_metrics") if isinstance(stats, dict) else None
    for m in (metrics or {}).values():
        tokens = m.get("accumulated_token_usage") if isinstance(m, dict) else None
        if not isinstance(tokens, dict):
            continue
        cached = int(tokens.get("cache_read_tokens") or 0)
        total.add(Usage(input_tokens=max(int(tokens.get("prompt_tokens") or 0) - cached, 0),
                        output_tokens=int(tokens.get("completion_tokens") or 0),
                        cache_read_tokens=cached,
                        cache_write_tokens=int(tokens.get("cache_write_tokens") or 0)))
    return total


def minus(a: Usage, b: Usage) -> Usage:
    """A − B, floored at zero (this turn's share of cumulative totals)."""
    return Usage(input_tokens=max(a.input_tokens - b.input_tokens, 0),
                 output_tokens=max(a.output_tokens - b.output_tokens, 0),
                 cache_read_tokens=max(a.cache_read_tokens - b.cache_read_tokens, 0),
                 cache_write_tokens=max(a.cache_write_tokens - b.cache_write_tokens, 0))


@dataclass
class Action:
    """A tool call the agent made: what tandem's permission decision reads."""

    call_id: str
    event_id: str
    tool: str
    kind: ToolKind
    title: str
    input: dict[str, object]
    done: bool = False


@dataclass
class Streamed:
    """The text and reasoning one streamed item (an LLM step) gave the sink so far."""

    attempt: int = 1
    text_parts: list[str] = field(default_factory=list)
    reasoning_parts: list[str] = field(default_factory=list)
    """Pieces, joined once when the durable event comes (linear in the answer)."""

    @property
    def text(self) -> str:
        """The text streamed so far."""
        return "".join(self.text_parts)

    @property
    def reasoning(self) -> str:
        """The reasoning streamed so far."""
        return "".join(self.reasoning_parts)


def _rest(whole: str, sent: str) -> str:
    """What of WHOLE the sink still lacks after SENT was streamed.

    The durable text normally equals the streamed one; a retried stream
    (a higher attempt) may differ, and then only a common prefix is known.
    """
    if whole.startswith(sent):
        return whole[len(sent):]
    return whole[len(_common_prefix(whole, sent)):]


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]


@dataclass
class EventMap:
    """The state of one remote turn as its events arrive."""

    sink: TurnSink
    status: str | None = None
    """The conversation's last execution status (``running``, ``finished`` …)."""
    error: str | None = None
    """The first error the server reported (its own words)."""
    usage: Usage = field(default_factory=Usage)
    """Cumulative totals of the conversation as last reported."""
    actions: dict[str, Action] = field(default_factory=dict)
    """Tool calls by call id, in order."""
    ran_shell: bool = False
    ran_tool: bool = False
    """A tool that can change files ran (an observation of a call but finish's or think's)."""
    seen: set[str] = field(default_factory=set)
    """Event ids already mapped (a duplicate is dropped)."""
    streamed: dict[str, Streamed] = field(default_factory=dict)
    """What ``delta`` frames already gave the sink, by item id (= the durable event's id)."""
    user_texts: list[str] = field(default_factory=list)
    """The user messages the server appended during the turn, in order (a steer's echo)."""

    @property
    def pending(self) -> list[Action]:
        """Actions without an observation yet (those a confirmation is about)."""
        return [a for a in self.actions.values() if not a.done]

    @property
    def ended(self) -> bool:
        """Whether the conversation reached a status that ends the turn."""
        return self.status in ENDED

    def on_event(self, event: object) -> None:
        """Report one server EVENT to the sink and note what the turn needs.

        The server's bytes are untrusted: an event that is not an object is
        dropped, and every field is read defensively (`_dict`, `str`).
        """
        if not isinstance(event, dict):
            return
        event_id = str(event.get("id") or "")
        if event_id and event_id in self.seen:
            return
        if event_id and event.get("kind") != "ConversationStateUpdateEvent":
            self.seen.add(event_id)
        handler = _HANDLERS.get(str(event.get("kind")))
        if handler is not None:
            handler(self, event)

    def on_delta(self, frame: Mapping[str, object]) -> None:
        """Report one streamed ``delta`` FRAME (text or reasoning) to the sink."""
        item = str(frame.get("item_id") or "")
        content = frame.get("content")
        if not item or not isinstance(content, str) or not content:
            return
        given = frame.get("attempt")
        attempt = given if isinstance(given, int) else 1
        slot = self.streamed.setdefault(item, Streamed(attempt))
        if attempt > slot.attempt:
            # A retry re-streams the item from its start. What the sink has cannot
            # be taken back: the retry's text follows it, and the durable event
            # then adds only what the retry's stream lacked.
            slot.attempt, slot.text_parts, slot.reasoning_parts = attempt, [], []
        elif attempt < slot.attempt:
            return  # a superseded attempt's late frame
        if frame.get("kind") == "reasoning":
            slot.reasoning_parts.append(content)
            self.sink.reasoning(content)
        else:
            slot.text_parts.append(content)
            self.sink.text(content)

    def _unstreamed(self, event: Mapping[str, object]) -> Streamed:
        return self.streamed.pop(str(event.get("id") or ""), None) or Streamed()

    def _message(self, event: Mapping[str, object]) -> None:
        message = _dict(event.get("llm_message"))
        if event.get("source") == "user" and message.get("role") == "user":
            self.user_texts.append(text_of(message.get("content")))
            return  # the user's own message, echoed back (the engine reads it: a steer)
        if event.get("source") != "agent" or message.get("role") != "assistant":
            return
        sent = self._unstreamed(event)
        if not sent.reasoning:
            for block in message.get("thinking_blocks") or []:
                if isinstance(block, dict) and block.get("thinking"):
                    self.sink.reasoning(str(block["thinking"]))
        text = _rest(text_of(message.get("content")), sent.text)
        if text:
            self.sink.text(text)
        self.sink.end_message()

    def _action(self, event: Mapping[str, object]) -> None:
        sent = self._unstreamed(event)
        thought = _rest(text_of(event.get("thought")), sent.text)
        if thought or sent.text:  # the text the model wrote with its call: a message first
            if thought:
                self.sink.text(thought)
            self.sink.end_message()
        action = _dict(event.get("action"))
        tool = str(event.get("tool_name") or "tool")
        call_id = str(event.get("tool_call_id") or event.get("id"))
        kind = tool_kind(tool, action)
        row = tool_input(action)
        diff = edit_diff(action) if kind == "edit" else None
        if diff:
            row["diff"] = diff
        call = Action(call_id, str(event.get("id")), tool, kind,
                      _title(tool, action, event.get("summary")), row)
        self.actions[call_id] = call
        self.sink.tool_call(call_id, tool, kind, call.title, call.input)

    def _observation(self, event: Mapping[str, object]) -> None:
        call = self.actions.get(str(event.get("tool_call_id")))
        observation = _dict(event.get("observation"))
        output = text_of(observation.get("content"))
        if call is None or call.done:
            return
        call.done = True
        if call.kind == "execute":
            self.ran_shell = True
        if call.tool not in INERT_TOOLS:
            self.ran_tool = True
        status = "failed" if observation.get("is_error") else "completed"
        self.sink.tool_result(call.call_id, status, _clip(output))

    def _rejected(self, event: Mapping[str, object]) -> None:
        call = self.actions.get(str(event.get("tool_call_id")))
        if call is not None and not call.done:
            call.done = True
            reason = str(event.get("rejection_reason") or "rejected")
            self.sink.tool_result(call.call_id, "refused", reason)

    def _agent_error(self, event: Mapping[str, object]) -> None:
        message = str(event.get("error") or "the agent reported an error")
        call = self.actions.get(str(event.get("tool_call_id")))
        if call is not None and not call.done:
            call.done = True
            self.sink.tool_result(call.call_id, "failed", _clip(message))
        elif self.error is None:
            self.error = message

    def _conversation_error(self, event: Mapping[str, object]) -> None:
        detail = event.get("detail") or event.get("code") or "conversation error"
        if self.error is None:
            self.error = str(detail)

    def _state(self, event: Mapping[str, object]) -> None:
        key, value = event.get("key"), event.get("value")
        if key == "execution_status" and isinstance(value, str):
            self.status = value
        elif key == "stats":
            self.usage = usage_of(value)
        elif key == "full_state" and isinstance(value, dict):
            if isinstance(value.get("execution_status"), str):
                self.status = value["execution_status"]
            if "stats" in value:
                self.usage = usage_of(value["stats"])

    def finish(self) -> None:
        """End of the turn: every call still open gets a result row."""
        for call in self.pending:
            call.done = True
            self.sink.tool_result(call.call_id, "failed", "no result: the turn ended first")


INERT_TOOLS = frozenset({"finish", "think"})
"""The agent-server's tools that change no file; alone they run without a confirmation."""

_HANDLERS = {
    "MessageEvent": EventMap._message,
    "ActionEvent": EventMap._action,
    "ObservationEvent": EventMap._observation,
    "UserRejectObservation": EventMap._rejected,
    "AgentErrorEvent": EventMap._agent_error,
    "ConversationErrorEvent": EventMap._conversation_error,
    "ConversationStateUpdateEvent": EventMap._state,
}


def describe(event: Mapping[str, object]) -> str:
    """A short description of EVENT for logs (never its content: it may quote secrets)."""
    return json.dumps({"kind": event.get("kind"), "id": event.get("id")})
