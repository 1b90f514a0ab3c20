"""What tandem sends an ACP agent as prompt text.

An agent keeps its own conversation, so a live ACP session gets only the new
user message. A fresh session gets the system text and, when the context has
earlier messages (a root chat the agent cannot resume), a transcript of them
as a seed. Pure functions of the request: golden-testable.
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


def _render(message: Message) -> str:
    if message.role == "user":
        return f"## User\n\n{message.text}"
    if message.role == "tool":
        status = " (error)" if message.is_error else ""
        label = message.name or message.call_id or ""
        return f"## Tool result{status} {label}\n\n{_clip(message.text)}"
    parts = [f"## Assistant\n\n{message.text}"] if message.text else ["## Assistant"]
    for call in message.tool_calls:
        parts.append(f"Tool call {call.name}: {_clip(json.dumps(call.input, ensure_ascii=False))}")
    return "\n\n".join(parts)


def first_prompt(request: TurnRequest) -> str:
    """The prompt of a fresh ACP session: system text, seed transcript, request."""
    text = latest_user_text(request)
    sections: list[str] = []
    if request.system.strip():
        sections.append(f"<instructions>\n{request.system.strip()}\n</instructions>")
    if has_history(request):
        transcript = "\n\n".join(_render(m) for m in request.messages[:-1])
        sections.append(
            "<conversation-so-far>\nThis conversation continues an earlier one; its"
            f" transcript follows.\n\n{transcript}\n</conversation-so-far>"
        )
        sections.append(f"Current request:\n\n{text}")
    else:
        sections.append(text)
    return "\n\n".join(sections)


def followup_prompt(request: TurnRequest) -> str:
    """The prompt for an ACP session that already holds the conversation."""
    return latest_user_text(request)
