"""Integration: a permission mode changed between two turns reaches the real
Claude Code ACP adapter as ``session/set_mode``, in the same process and
conversation (against the fake Anthropic server; skipped, with the reason
printed, when the adapter cannot be installed)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_adapter import AdapterUnavailable, ensure_adapter
from claude_helpers import Claude
from fakes.script import Reply, Script

from tandem.adapters.sessions import new
from tandem.app import App
from tandem.config.front_end import ClientConfig
from tandem.events import RecordingSink
from tandem.protocol.sessions import NewParams
from tandem.providers.base import PermissionMode
from tandem.turns.engine import TurnSpec


@pytest.fixture(scope="module")
def adapter() -> Path:
    try:
        return ensure_adapter()
    except AdapterUnavailable as exc:
        print(f"\nskipping the Claude ACP mode-change test: {exc}", file=sys.stderr)
        pytest.skip(f"Claude Code ACP adapter unavailable: {exc}")


@pytest.fixture
def claude(adapter: Path, tmp_path: Path) -> Iterator[Claude]:
    c = Claude(adapter, tmp_path, Script([], default=Reply(text="OK")))
    yield c
    c.close()


def test_a_mode_change_reaches_the_running_claude_agent(claude: Claude, tmp_path: Path) -> None:
    c = claude
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "tandem" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"acp_agents": {"claude": {
        "command": [str(c.adapter)], "env": c.env()}}}))

    async def scenario() -> tuple[list[str], list[int | None]]:
        app = App(home=tmp_path / "tandem-home", events=RecordingSink())
        outcomes, pids = [], []
        try:
            sid = (await new(app, NewParams(cwd=str(c.root)))).id
            turns: list[tuple[str, PermissionMode]] = [
                ("FIRST request", "ask"), ("SECOND request", "read-only")]
            for text, mode in turns:
                app.turns.configure(ClientConfig(permission_mode=mode))
                engine = app.turns.engine
                turn = await engine.accept(TurnSpec(session=sid, text=text,
                                                    provider="acp:claude", permission_mode=mode))
                ended = await asyncio.wait_for(engine.wait(sid, turn), 120)
                outcomes.append(ended.outcome)
                pids.extend(getattr(p, "pid", None) for p in app.turns._providers.values())
        finally:
            await app.aclose()
        return outcomes, pids

    outcomes, pids = asyncio.run(scenario())
    assert outcomes == ["succeeded", "succeeded"]
    assert len(pids) == 2 and pids[0] is not None and pids[0] == pids[1], pids  # not restarted
    body: dict[str, Any] = c.agent_bodies()[-1]
    text = json.dumps(body)
    assert "Plan mode is active" in text  # session/set_mode reached the agent
    assert "Earlier conversation" not in text  # nothing was re-seeded
    users = [m for m in body["messages"] if m["role"] == "user"]
    assert "FIRST request" in json.dumps(users[0]) and "SECOND request" in json.dumps(users[-1])
