"""The soak's model: a fake OpenAI server whose reply is read off the request.

A chat message of the soak carries its plan in brackets (``[soak 17 write
t3.txt v17]``), so the reply depends only on the request, never on the order
requests come in: a run replays the same way after a crash. Every request is
kept (`FakeOpenAI.requests`) for the projection invariant.
"""

from __future__ import annotations

from typing import Any

from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, Script, ToolCallSpec, last_user_text

from .plan import PLAN, tag

__all__ = ["reply", "server", "tag"]


def _last_is_tool(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and isinstance(messages[-1], dict) and messages[-1].get("role") == "tool"


def reply(body: dict[str, Any]) -> Reply:
    """The reply to a chat request BODY (see the module's docstring)."""
    if _last_is_tool(body):
        return Reply(text="done", chunk_size=8)
    text = last_user_text(body)
    found = PLAN.findall(text)
    if not found:  # a compaction's summary request, a directive's prompt
        return Reply(text="Summary: the soak wrote some files.", chunk_size=16)
    op, action, a, b = found[-1]
    if action == "write":
        call = ToolCallSpec(id=f"call_{op}", name="write_file",
                            input={"path": a, "content": b + "\n"})
        return Reply(text=f"writing {a}", chunk_size=8, tool_calls=[call])
    if action == "fail":
        return Reply(status=400, message=f"soak {op}: scripted failure")
    if action == "broken":
        return Reply(text=f"half an answer of {op} " * 4, broken=True)
    if action == "slow":  # long enough to cancel, queue behind or drop the connection of
        return Reply(text=f"slow answer {op} " * 8, chunk_size=4, delay=0.005)
    return Reply(text=f"answer {op}", chunk_size=8)


def server() -> FakeOpenAI:
    """A fake model serving `reply` (not started)."""
    return FakeOpenAI(Script.of(reply))
