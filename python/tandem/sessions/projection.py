"""Projection: from a journal to the context an ordinary-chat request sends.

A pure function (DESIGN.md §1): it drops everything inside directive
boundaries, everything before the latest compaction summary, and every
rewound turn; what is left becomes provider-neutral messages. It reads
entries as plain dicts so that it runs straight off ``json.loads`` lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tandem.providers.base import Message, ToolCallRef

SUMMARY_PREFIX = "Summary of the conversation so far:\n\n"


def visible_turns(entries: Iterable[Mapping[str, Any]]) -> tuple[set[int], set[int]]:
    """Return (every turn seen, turns hidden by rewinds) in ENTRIES."""
    seen: set[int] = set()
    hidden: set[int] = set()
    for e in entries:
        turn = e.get("turn")
        if e.get("type") == "turn_start" and isinstance(turn, int):
            seen.add(turn)
        elif e.get("type") == "rewind":
            before = e.get("before_turn")
            if isinstance(before, int):
                hidden.update(t for t in seen if t >= before)
    return seen, hidden


def directive_turns(entries: Iterable[Mapping[str, Any]]) -> set[int]:
    """Turns that lie inside a directive boundary."""
    return {
        e["turn"]
        for e in entries
        if e.get("type") == "directive_open" and isinstance(e.get("turn"), int)
    }


def project(entries: Sequence[Mapping[str, Any]]) -> list[Message]:
    """The ordinary-chat context of a session whose journal holds ENTRIES."""
    _, hidden = visible_turns(entries)
    excluded = hidden | directive_turns(entries)
    start = 0
    summary: str | None = None
    first_kept = 0
    for i, e in enumerate(entries):
        if e.get("type") == "compaction":
            start, summary = i + 1, str(e.get("summary", ""))
            first_kept = int(e.get("first_kept_turn") or 0)
    messages: list[Message] = []
    if summary is not None:
        messages.append(Message(role="user", text=SUMMARY_PREFIX + summary))
        messages.append(Message(role="assistant", text="Understood."))
        # Kept turns precede the compaction entry in the journal.
        body: list[Mapping[str, Any]] = [e for e in entries[:start] if _turn(e) >= first_kept > 0]
        body.extend(entries[start:])
    else:
        body = list(entries)
    for e in body:
        turn = _turn(e)
        if turn in excluded or turn < 0:
            continue
        _add(messages, e)
    # Dangling tool calls (an aborted turn) are paired by the native provider
    # (`complete_tool_pairs`), which knows what its API rejects.
    return messages


def _turn(e: Mapping[str, Any]) -> int:
    turn = e.get("turn")
    return turn if isinstance(turn, int) else -1


# Entries were validated when they were read, so messages are built without
# a second validation: pydantic's constructor (and even `model_construct`,
# which resolves every default in Python) was 80 % of the cost of projecting
# a long journal. `test_fast_messages_equal_validated_ones` keeps this honest.
_FIELDS = frozenset(Message.model_fields)


def _msg(role: str, text: str = "", tool_calls: list[ToolCallRef] | None = None,
         call_id: str | None = None, is_error: bool = False) -> Message:
    m = object.__new__(Message)
    object.__setattr__(m, "__dict__", {
        "role": role, "text": text, "tool_calls": [] if tool_calls is None else tool_calls,
        "call_id": call_id, "name": None, "is_error": is_error})
    object.__setattr__(m, "__pydantic_fields_set__", set(_FIELDS))
    object.__setattr__(m, "__pydantic_extra__", None)
    object.__setattr__(m, "__pydantic_private__", None)
    return m


def _call(id: str, name: str, input: dict[str, Any]) -> ToolCallRef:  # noqa: A002
    return ToolCallRef(id=id, name=name, input=input)


def _add(messages: list[Message], e: Mapping[str, Any]) -> None:
    kind = e.get("type")
    if kind == "user":
        messages.append(_msg("user", str(e.get("text", ""))))
    elif kind == "assistant":
        messages.append(_msg("assistant", str(e.get("text", ""))))
    elif kind == "tool_call":
        call = _call(id=str(e.get("call_id")), name=str(e.get("name", "")),
                     input=dict(e.get("input") or {}))
        last = messages[-1] if messages else None
        if last is not None and last.role == "assistant":
            last.tool_calls.append(call)
        else:
            messages.append(_msg("assistant", "", [call]))
    elif kind == "tool_result":
        output = e.get("output", "")
        messages.append(_msg("tool", output if isinstance(output, str) else str(output),
                             call_id=str(e.get("call_id")),
                             is_error=e.get("status") != "completed"))
