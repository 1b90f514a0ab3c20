"""What a real ACP agent (fake_agent.py, the SDK's agent side over real pipes)
sees and costs at the edges: an update off the schema, a refused file request,
a permission mode changed between two turns."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp_helpers import RecordingSink, chat
from test_acp_fake_agent import FAKE_AGENT, Agent, _run_and_close, run

from tandem.adapters.sessions import new
from tandem.app import App
from tandem.config.front_end import ClientConfig
from tandem.events import RecordingSink as EventRecorder
from tandem.protocol.sessions import NewParams
from tandem.turns.engine import TurnSpec

OFF_SCHEMA = {"sessionUpdate": "usage_update", "used": None, "size": 200000}
"""What the Claude adapter sends when it does not know the context size yet."""


def test_an_update_off_the_schema_is_logged_once_and_skipped(
    tmp_path: Path, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    agent = Agent(tmp_path, {"prompts": [[
        {"say": "a"}, {"raw_update": OFF_SCHEMA}, {"raw_update": OFF_SCHEMA}, {"say": "b"}]]})
    caplog.set_level(logging.DEBUG)
    sink = RecordingSink()
    (result,) = run(_run_and_close(agent.provider(), (chat(root, "hi"), sink)))
    assert result.outcome == "succeeded", result.error
    assert sink.streamed() == "ab"  # the turn went on past the bad update
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    about = [r.getMessage() for r in caplog.records if "usage_update" in r.getMessage()]
    assert len(about) == 1, about  # once per kind, not per notification
    assert "Traceback" not in caplog.text


def _configure(tmp_path: Path, script: dict[str, Any]) -> Path:
    """Make the fake agent with SCRIPT the user's ``acp:fake``; return its log file."""
    script_path, log = tmp_path / "agent.json", tmp_path / "agent-log.jsonl"
    script_path.write_text(json.dumps(script))
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "tandem" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"acp_agents": {"fake": {
        "command": [sys.executable, str(FAKE_AGENT), str(script_path), str(log)]}}}))
    return log


def test_tandem_ask_prints_no_traceback_for_an_update_off_the_schema(
    tmp_path: Path, root: Path
) -> None:
    _configure(tmp_path, {"prompts": [[{"say": "a"}, {"raw_update": OFF_SCHEMA}, {"say": "b"}]]})
    proc = subprocess.run(
        [sys.executable, "-m", "tandem.cli", "ask", "--cwd", str(root),
         "--provider", "acp:fake", "hi"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ab")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "ValidationError" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("action", "why"),
    [({"fs_write": ["keep.txt", "changed"]}, "this turn is read-only"),
     ({"fs_read": "../outside.txt"}, "outside the workspace root")],
)
def test_a_refused_file_request_reaches_the_agent_with_tandems_reason(
    tmp_path: Path, root: Path, action: dict[str, object], why: str
) -> None:
    (root / "keep.txt").write_text("keep")
    (tmp_path / "outside.txt").write_text("secret")
    agent = Agent(tmp_path, {"prompts": [[action, {"say": "done"}]]})
    request = chat(root, "go", permission_mode="read-only")
    (result,) = run(_run_and_close(agent.provider(), (request, RecordingSink())))
    assert result.outcome == "succeeded", result.error
    (error,) = [e["params"] for e in agent.log("fs-error")]
    # An agent that shows only the JSON-RPC message still shows why.
    assert why in error["message"], error
    assert why in error["data"]["message"], error
    assert (root / "keep.txt").read_text() == "keep"


def test_a_mode_change_between_turns_sets_the_mode_and_keeps_the_agent(
    tmp_path: Path, root: Path
) -> None:
    log = _configure(tmp_path, {
        "modes": {"current": "default", "available": ["default", "acceptEdits", "plan"]},
        "prompts": [[{"say": "one"}], [{"say": "two"}]]})

    async def scenario() -> list[str]:
        app = App(home=tmp_path / "home", events=EventRecorder())
        try:
            sid = (await new(app, NewParams(cwd=str(root)))).id
            outcomes = []
            # (auto-edit keeps the agent in its asking mode: read-only is the switch.)
            for text, mode in (("first request", "ask"), ("second request", "read-only")):
                # What M-x tandem-set-permission-mode does between the turns.
                app.turns.configure(ClientConfig(permission_mode=mode))
                engine = app.turns.engine
                turn = await engine.accept(TurnSpec(session=sid, text=text, provider="acp:fake",
                                                    permission_mode=mode))
                outcomes.append((await engine.wait(sid, turn)).outcome)
            return outcomes
        finally:
            await app.aclose()

    assert run(scenario()) == ["succeeded", "succeeded"]
    agent_log = [json.loads(line) for line in log.read_text().splitlines()]
    methods = [e["method"] for e in agent_log]
    assert methods.count("initialize") == 1, methods  # the same process
    assert methods.count("session/new") == 1, methods
    prompts = [e["params"] for e in agent_log if e["method"] == "session/prompt"]
    assert prompts[1]["session_id"] == prompts[0]["session_id"]
    assert prompts[1]["text"] == "second request"  # nothing of the first turn again
    switches = [e["params"]["mode_id"] for e in agent_log if e["method"] == "session/set_mode"]
    assert switches[-1] == "plan", switches
