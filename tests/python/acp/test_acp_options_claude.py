"""Integration: an ACP agent's modes and models, chosen per session or changed
between turns, reach the real Claude Code ACP adapter (against the fake
Anthropic server)."""

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
from acp_helpers import RecordingSink, chat
from claude_helpers import Claude
from fakes.script import Reply, Script

from tandem.adapters.sessions import new
from tandem.app import App
from tandem.config.front_end import ClientConfig
from tandem.events import RecordingSink as EventRecorder
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import NewParams
from tandem.providers.base import PermissionMode
from tandem.turns.engine import TurnSpec


@pytest.fixture(scope="module")
def adapter() -> Path:
    try:
        return ensure_adapter()
    except AdapterUnavailable as exc:
        print(f"\nskipping Claude ACP option tests: {exc}", file=sys.stderr)
        pytest.skip(f"Claude Code ACP adapter unavailable: {exc}")


@pytest.fixture
def claude(adapter: Path, tmp_path: Path) -> Iterator[Claude]:
    c = Claude(adapter, tmp_path, Script([], default=Reply(text="OK")))
    yield c
    c.close()


def test_modes_and_models_are_offered_chosen_and_reach_the_agent(claude: Claude) -> None:
    c = claude

    async def scenario() -> Any:
        provider = c.provider()
        try:
            offered = await provider.session_options(c.root)
            models = [m.id for m in offered.models]
            print(f"\nmodels offered: {models}, current {offered.model}", file=sys.stderr)
            # A model of another family: the request's model names it, whatever its alias.
            other = next(m for m in models if "haiku" in m or "opus" in m)
            with pytest.raises(TandemError, match="no mode 'warp'"):
                await provider.choose("mode", "warp", c.root)
            after_mode = await provider.choose("mode", "plan", c.root)
            after_model = await provider.choose("model", other, c.root)
            result = await c.turn(provider, chat(c.root, "hello there"), RecordingSink())
            return offered, other, after_mode, after_model, result, provider.last_session
        finally:
            await provider.close()

    offered, other, after_mode, after_model, result, session = asyncio.run(scenario())
    assert {"default", "acceptEdits", "plan"} <= {m.id for m in offered.modes}
    assert offered.mode == "default" and offered.models and offered.chosen == {}
    assert after_mode.mode == "plan" and after_mode.chosen == {"mode": "plan"}
    assert after_model.model == other and after_model.chosen == {"mode": "plan", "model": other}
    assert result.outcome == "succeeded", result.error
    # The session opened for the options is the one the first turn prompts, and records.
    assert len(c.sent("session/new")) == 1 and session is not None and session.how == "new"
    assert [m["params"]["modeId"] for m in c.sent("session/set_mode")] == ["plan"]
    assert [m["params"]["value"] for m in c.sent("session/set_config_option")] == [other]
    # What the adapter does with them: the model asked for, and plan mode's instructions.
    body = c.agent_bodies()[-1]
    family = "haiku" if "haiku" in other else "opus"
    assert family in body["model"], body["model"]
    assert "Plan mode is active" in json.dumps(body)


@pytest.mark.parametrize("chosen", [{"mode": "plan"}, {}], ids=["plan", "none"])
def test_a_recorded_choice_is_applied_to_a_new_provider(
    claude: Claude, chosen: dict[str, str]
) -> None:
    c = claude

    async def scenario() -> Any:
        provider = c.provider(choices=chosen)
        try:
            return await c.turn(provider, chat(c.root, "hello"), RecordingSink())
        finally:
            await provider.close()

    result = asyncio.run(scenario())
    assert result.outcome == "succeeded", result.error
    assert [m["params"]["modeId"] for m in c.sent("session/set_mode")] == (
        ["plan"] if chosen else []
    )
    # The control without a choice shows the marker is plan mode's, not always there.
    assert ("Plan mode is active" in json.dumps(c.agent_bodies()[-1])) == bool(chosen)


def test_a_mode_change_reaches_the_running_claude_agent(claude: Claude, tmp_path: Path) -> None:
    c = claude
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "tandem" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"acp_agents": {"claude": {
        "command": [str(c.adapter)], "env": c.env()}}}))

    async def scenario() -> tuple[list[str], list[int | None]]:
        app = App(home=tmp_path / "tandem-home", events=EventRecorder())
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
