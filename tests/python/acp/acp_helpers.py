"""Helpers of the ACP tests: a recording `TurnSink`, requests, process checks."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tandem.providers.base import Message, PermissionAnswer, PermissionRequest, TurnRequest


class RecordingSink:
    """A `TurnSink` that records every report; permissions answered by ANSWER."""

    def __init__(self, answer: PermissionAnswer | Callable[[PermissionRequest], Any] = "reject"):
        self.events: list[tuple[Any, ...]] = []
        self.asked: list[PermissionRequest] = []
        self.answer = answer
        self.got_text = asyncio.Event()

    def text(self, delta: str) -> None:
        self.events.append(("text", delta))
        self.got_text.set()

    def reasoning(self, delta: str) -> None:
        self.events.append(("reasoning", delta))

    def end_message(self) -> None:
        self.events.append(("end_message",))

    def tool_call(
        self, call_id: str, name: str, kind: str, title: str, input: dict[str, Any],
        decided_by: str | None = None,
    ) -> None:
        self.events.append(("tool_call", call_id, name, kind, title, input))

    def tool_result(self, call_id: str, status: str, output: str) -> None:
        self.events.append(("tool_result", call_id, status, output))

    def plan(self, entries: list[dict[str, Any]]) -> None:
        self.events.append(("plan", entries))

    async def ask_permission(self, request: PermissionRequest) -> PermissionAnswer:
        self.asked.append(request)
        self.events.append(("ask", request.call_id))
        if callable(self.answer):
            result = self.answer(request)
            if asyncio.iscoroutine(result):
                result = await result
            return result  # type: ignore[no-any-return]
        return self.answer

    def kinds(self) -> list[str]:
        """The event kinds in order."""
        return [e[0] for e in self.events]

    def streamed(self) -> str:
        """All streamed text."""
        return "".join(e[1] for e in self.events if e[0] == "text")

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        """The events of KIND."""
        return [e for e in self.events if e[0] == kind]


def chat(root: Path, *texts: str, **fields: Any) -> TurnRequest:
    """A request whose context alternates user/assistant TEXTS, ending with a user text."""
    roles = ["user", "assistant"]
    messages = [
        Message(role=roles[(len(texts) - 1 - i) % 2], text=t)  # type: ignore[arg-type]
        for i, t in enumerate(texts)
    ]
    return TurnRequest(session_id="sess", turn=1, root=root, messages=messages, **fields)


def living_pgroup(pgid: int) -> list[int]:
    """Non-zombie processes of process group PGID."""
    from tandem.providers.acp_process import living_group_members

    return living_group_members(pgid)


def living_with_env(key: str, value: str) -> list[int]:
    """Non-zombie processes whose environment has KEY=VALUE (readable as root or owner)."""
    needle = f"{key}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X") and needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def pid_alive(pid: int) -> bool:
    """Whether PID runs and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
