"""The Claude Code ACP adapter under test: a fake Anthropic server, a temp HOME,
and `AcpProvider`s running the adapter (shared by the ACP integration tests)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp_helpers import RecordingSink, living_pgroup, living_with_env
from fakes.anthropic_server import FakeAnthropic
from fakes.script import Script

from tandem.providers.acp import AcpProvider

TURN_TIMEOUT = 90


class Claude:
    """One fake Anthropic server, a temp HOME, and providers running the adapter."""

    def __init__(self, adapter: Path, tmp: Path, script: Script) -> None:
        self.adapter = adapter
        self.home = tmp / "home"
        self.home.mkdir()
        self.root = tmp / "project"
        self.root.mkdir()
        self.fake = FakeAnthropic(script).start()
        self.wire: list[tuple[str, dict[str, Any]]] = []
        self.providers: list[AcpProvider] = []
        self.pids: list[int] = []

    def env(self) -> dict[str, str]:
        return {
            "ANTHROPIC_BASE_URL": self.fake.base_url,
            "ANTHROPIC_API_KEY": "sk-fake-key",
            "HOME": str(self.home),
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }

    def provider(self, **kwargs: Any) -> AcpProvider:
        provider = AcpProvider(
            "claude",
            [str(self.adapter)],
            self.env(),
            on_wire=lambda d, m: self.wire.append((d, m)),
            **kwargs,
        )
        self.providers.append(provider)
        return provider

    async def turn(self, provider: AcpProvider, request: Any, sink: RecordingSink) -> Any:
        result = await asyncio.wait_for(provider.run(request, sink), TURN_TIMEOUT)
        if provider.pid is not None and provider.pid not in self.pids:
            self.pids.append(provider.pid)
        return result

    def sent(self, method: str) -> list[dict[str, Any]]:
        return [m for d, m in self.wire if d == "outgoing" and m.get("method") == method]

    def agent_bodies(self) -> list[dict[str, Any]]:
        """Bodies of the model requests of the agent loop (with tools)."""
        return [
            r.body
            for r in self.fake.api_requests("/v1/messages")
            if isinstance(r.body, dict) and r.body.get("tools")
        ]

    def leftovers(self) -> list[int]:
        """Processes of this test still alive: by HOME, and by process group."""
        left = set(living_with_env("HOME", str(self.home)))
        for pid in self.pids:
            left.update(living_pgroup(pid))
        return sorted(left)

    def close(self) -> None:
        self.fake.stop()
