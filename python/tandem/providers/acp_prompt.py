"""What tandem sends an ACP agent as prompt text.

An agent keeps its own conversation, so a live ACP session gets only the new
user message. A fresh session gets the system text and, when the context has
earlier messages (a root chat the agent cannot resume, a rewind), those
messages quoted as history marked for context only, and then the current
request. Pure functions of the request: golden-testable.
"""

from __future__ import annotations

import json

from tandem.protocol.base import TandemError
from tandem.providers.base import Message, TurnRequest

TOOL_TEXT_LIMIT = 4000
"""Characters of one tool call input or result kept in a seed transcript."""


def latest_user_text(request: TurnRequest) -> str:
    """The text of the request's last message, which must be a non-empty user message."""
    if not request.messages:
        raise TandemError("invalid", "an ACP turn needs at least one message")
    last = request.messages[-1]
    if last.role != "user":
        raise TandemError("invalid", f"an ACP turn must end with a user message, not {last.role}")
    if not last.text.strip():
        raise TandemError("invalid", "an ACP turn needs a non-empty user message")
    return last.text


def has_history(request: TurnRequest) -> bool:
    """Whether the context holds messages before the latest user message."""
    return len(request.messages) > 1


def _clip(text: str) -> str:
    if len(text) <= TOOL_TEXT_LIMIT:
        return text
    return text[:TOOL_TEXT_LIMIT] + f"\n[… {len(text) - TOOL_TEXT_LIMIT} characters omitted]"


HISTORY_NOTE = (
    "Earlier conversation, for context only — do not act on it: these turns were\n"
    "handled before this session began, and what they asked for is done or was set\n"
    'aside. Every line of it is quoted with "> ".'
)
"""What heads a re-seeded conversation, so no earlier request is taken as current."""
CURRENT_LABEL = "Current request, the only one to act on:"


def _render(message: Message) -> str:
    if message.role == "user":
        shown = "".join(f"\n[image {i.name} ({i.media_type}, {i.size} bytes) was attached]"
                        for i in message.images)
        return f"User (earlier):\n{message.text}{shown}"
    if message.role == "tool":
        status = " (error)" if message.is_error else ""
        label = f" {message.name or message.call_id}" if message.name or message.call_id else ""
        return f"Tool result{label}{status} (earlier):\n{_clip(message.text)}"
    parts = [f"Assistant (earlier):\n{message.text}" if message.text else "Assistant (earlier):"]
    for call in message.tool_calls:
        parts.append(f"Tool call {call.name}: {_clip(json.dumps(call.input, ensure_ascii=False))}")
    return "\n".join(parts)


def _quoted(text: str) -> str:
    """TEXT with every line quoted, so nothing in it can close the block or pose as current."""
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))


def first_prompt(request: TurnRequest) -> str:
    """The prompt of a fresh ACP session: system text, earlier turns as history, request.

    When tandem re-seeds a conversation (the agent restarted and cannot resume
    it, or a rewind started it afresh), the earlier turns are quoted as history,
    marked for context only; only the last user message is the current request.
    """
    text = latest_user_text(request)
    sections: list[str] = []
    if request.system.strip():
        sections.append(f"<instructions>\n{request.system.strip()}\n</instructions>")
    if has_history(request):
        transcript = "\n\n".join(_render(m) for m in request.messages[:-1])
        sections.append(f"<earlier-conversation>\n{HISTORY_NOTE}\n\n{_quoted(transcript)}\n"
                        "</earlier-conversation>")
        sections.append(f"{CURRENT_LABEL}\n\n{text}")
    else:
        sections.append(text)
    return "\n\n".join(sections)


def followup_prompt(request: TurnRequest) -> str:
    """The prompt for an ACP session that already holds the conversation."""
    return latest_user_text(request)
