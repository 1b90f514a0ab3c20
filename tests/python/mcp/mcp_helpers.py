"""Shared pieces of the MCP tests: the fake server's config, a recording sink."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tandem.config.model import McpStdioServer
from tandem.providers.base import PermissionRequest

FAKE = Path(__file__).resolve().parents[2] / "fakes" / "mcp_server.py"


def fake_server(env: dict[str, str] | None = None) -> McpStdioServer:
    """The SDK-written test server over stdio."""
    return McpStdioServer(command=sys.executable, args=[str(FAKE)], env=env or {})


class Sink:
    """A `TurnSink` that records what a provider reports and answers permissions."""

    def __init__(self, answer: str = "allow_once") -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, str]] = []
        self.results: list[tuple[str, str, str]] = []
        self.asked: list[PermissionRequest] = []
        self.texts: list[str] = []

    def text(self, delta: str) -> None:
        self.texts.append(delta)

    def reasoning(self, delta: str) -> None:
        pass

    def end_message(self) -> None:
        pass

    def tool_call(self, call_id: str, name: str, kind: str, title: str,
                  input: dict[str, Any], decided_by: str | None = None) -> None:
        self.calls.append((call_id, name, kind))

    def tool_result(self, call_id: str, status: str, output: str) -> None:
        self.results.append((call_id, status, output))

    def plan(self, entries: list[dict[str, Any]]) -> None:
        pass

    async def ask_permission(self, request: PermissionRequest) -> Any:
        self.asked.append(request)
        return self.answer
