"""Helpers for native provider tests: a recording TurnSink and provider builders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.anthropic_server import FakeAnthropic
from fakes.http_base import FakeServer, RecordedRequest
from fakes.openai_server import FakeOpenAI

from tandem.providers.anthropic import AnthropicWire
from tandem.providers.base import Message, PermissionRequest, TurnRequest
from tandem.providers.credentials import resolve_credentials
from tandem.providers.native import LoopLimits, NativeProvider
from tandem.providers.openai import OpenAIWire
from tandem.tools.permissions import SessionGrants

KEY = "sk-tandem-test-7f3a9c1e5b2d4f6a8c0e"
"""A distinctive API key: the leak test looks for it everywhere."""

FAMILIES = ["openai", "anthropic"]


class RecordingSink:
    """A TurnSink that records every call in order and answers permissions from a list.

    With JOURNAL set, every call is also appended to that file as one JSON
    line, like the turn engine's journal, so tests can scan what was written.
    """

    def __init__(self, answers: list[str] | None = None, journal: Path | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.answers = list(answers or [])
        self.asked: list[PermissionRequest] = []
        self.journal = journal

    def _add(self, kind: str, value: Any) -> None:
        self.calls.append((kind, value))
        if self.journal is not None:
            with open(self.journal, "a", encoding="utf-8") as f:
                f.write(json.dumps({"type": kind, "value": value}) + "\n")

    def text(self, delta: str) -> None:
        self._add("text", delta)

    def reasoning(self, delta: str) -> None:
        self._add("reasoning", delta)

    def end_message(self) -> None:
        self._add("end_message", None)

    def tool_call(
        self, call_id: str, name: str, kind: str, title: str, input: dict[str, Any],
        decided_by: str | None = None,
    ) -> None:
        self._add(
            "tool_call", {"id": call_id, "name": name, "kind": kind, "title": title, "input": input}
        )

    def tool_result(self, call_id: str, status: str, output: str) -> None:
        self._add("tool_result", {"id": call_id, "status": status, "output": output})

    def plan(self, entries: list[dict[str, Any]]) -> None:
        self._add("plan", entries)

    async def ask_permission(self, request: PermissionRequest) -> Any:
        self.asked.append(request)
        self._add("interaction", request.model_dump())
        if not self.answers:
            raise AssertionError(f"unexpected permission request {request}")
        answer = self.answers.pop(0)
        self._add("interaction_answer", answer)
        return answer

    # --- views -------------------------------------------------------------------

    def streamed(self, kind: str = "text") -> str:
        """Everything streamed on KIND (``text`` or ``reasoning``)."""
        return "".join(v for k, v in self.calls if k == kind)

    def of(self, kind: str) -> list[Any]:
        """The values of every call of KIND."""
        return [v for k, v in self.calls if k == kind]


def make_fake(family: str, script: Any) -> FakeServer:
    """A started-on-enter fake server of FAMILY."""
    return FakeOpenAI(script) if family == "openai" else FakeAnthropic(script)


def make_provider(
    family: str,
    fake: FakeServer,
    grants: SessionGrants | None = None,
    key: str = KEY,
    **limits: Any,
) -> NativeProvider:
    """A native provider of FAMILY talking to FAKE, with fast retries."""
    lim = LoopLimits(**{"backoff": 0.01, "shell_timeout": 5.0, **limits})
    if family == "openai":
        creds = resolve_credentials("openai", api_key=key, base_url=fake.base_url + "/v1", env={})
        return NativeProvider(
            "openai:fake", OpenAIWire(creds), limits=lim, grants=grants or SessionGrants()
        )
    creds = resolve_credentials("anthropic", api_key=key, base_url=fake.base_url, env={})
    return NativeProvider(
        "anthropic:fake", AnthropicWire(creds), limits=lim, grants=grants or SessionGrants()
    )


def request(root: Path, text: str = "Do it.", **kw: Any) -> TurnRequest:
    """A one-message chat turn in ROOT."""
    return TurnRequest(
        session_id=kw.pop("session_id", "s1"),
        turn=kw.pop("turn", 1),
        root=root,
        model=kw.pop("model", "fake-model"),
        messages=kw.pop("messages", [Message(role="user", text=text)]),
        **kw,
    )


def api_path(family: str) -> str:
    """The POST path of the streaming endpoint."""
    return "/v1/chat/completions" if family == "openai" else "/v1/messages"


def tool_result_sent(family: str, req: RecordedRequest) -> list[str]:
    """The tool results carried by request REQ, as texts."""
    out: list[str] = []
    for msg in req.body["messages"]:
        if family == "openai" and msg.get("role") == "tool":
            out.append(msg["content"])
        if family == "anthropic" and isinstance(msg.get("content"), list):
            out += [b["content"] for b in msg["content"] if b.get("type") == "tool_result"]
    return out
