"""Rewind of an ACP root chat against the scripted ACP agent (a real process
speaking ACP over stdio, tests/python/acp/fake_agent.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tandem.app import App
from tandem.events import RecordingSink
from tandem.turns.engine import TurnEnded, TurnSpec

from .helpers import entries, new_session

pytestmark = pytest.mark.anyio

FAKE_AGENT = Path(__file__).resolve().parents[1] / "acp" / "fake_agent.py"
PROVIDER = "acp:fake"


def _agent(tmp_path: Path) -> Path:
    """Configure the fake agent (it can resume sessions); return its log file."""
    script, log = tmp_path / "agent.json", tmp_path / "agent-log.jsonl"
    script.write_text(json.dumps({"capabilities": {"close": True, "resume": True},
                                  "prompts": [[{"say": "one"}], [{"say": "two"}]]}))
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "tandem" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"acp_agents": {"fake": {
        "command": [sys.executable, str(FAKE_AGENT), str(script), str(log)]}}}))
    return log


def _prompts(log: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    return [r["params"] for r in rows if r["method"] == "session/prompt"]


async def _chat(app: App, session: str, text: str) -> TurnEnded:
    engine = app.turns.engine
    turn = await engine.accept(TurnSpec(session=session, text=text, provider=PROVIDER))
    return await engine.wait(session, turn)


async def test_acp_root_chat_starts_afresh_after_a_rewind(
        app: App, project: Path, tmp_path: Path) -> None:
    log = _agent(tmp_path)
    sid = await new_session(app, project)
    try:
        assert (await _chat(app, sid, "ALPHA request")).outcome == "succeeded"
        assert (await _chat(app, sid, "BRAVO request")).outcome == "succeeded"
        plan = await app.rewinds.plan(sid, 2)
        assert plan.acp_reset
        done = await app.rewinds.rewind(sid, 2, plan.digest)
        assert done.acp_reset
        assert (await _chat(app, sid, "CHARLIE request")).outcome == "succeeded"
    finally:
        await app.turns.aclose()
    alpha, bravo, charlie = _prompts(log)
    assert alpha["session_id"] == bravo["session_id"]
    # A new ACP session, seeded from the projection: turn 1 only.
    assert charlie["session_id"] != alpha["session_id"]
    assert "ALPHA request" in charlie["text"] and "CHARLIE request" in charlie["text"]
    assert "BRAVO" not in charlie["text"]
    journal = entries(app, sid)
    rewind_entry = next(e for e in journal if e["type"] == "rewind")
    assert rewind_entry["acp_reset"] is True
    assert [(e["acp_session_id"], e["how"]) for e in journal if e["type"] == "acp_session"] == [
        (alpha["session_id"], "new"), (charlie["session_id"], "seeded")]


async def test_acp_reset_survives_a_backend_restart(
        app: App, project: Path, tmp_path: Path) -> None:
    log = _agent(tmp_path)
    sid = await new_session(app, project)
    try:
        await _chat(app, sid, "ALPHA request")
        await _chat(app, sid, "BRAVO request")
        await app.rewinds.rewind(sid, 2, (await app.rewinds.plan(sid, 2)).digest)
    finally:
        await app.turns.aclose()
    app.sessions.manager.close()
    later = App(home=app.home, events=RecordingSink())
    try:
        await _chat(later, sid, "CHARLIE request")
    finally:
        await later.turns.aclose()
    alpha, _bravo, charlie = _prompts(log)
    assert charlie["session_id"] != alpha["session_id"]
    assert "BRAVO" not in charlie["text"]
