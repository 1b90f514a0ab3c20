"""A turn of an ACP agent (the scripted agent, a real process over stdio) reverts
like a native one: the same checkpoints around the turn."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from rewind.helpers import new_session
from tandem.app import App
from tandem.turns.engine import TurnSpec

pytestmark = pytest.mark.anyio

FAKE_AGENT = Path(__file__).resolve().parents[1] / "acp" / "fake_agent.py"
OLD = "".join(f"line {i}\n" for i in range(1, 21))
NEW = OLD.replace("line 2\n", "LINE 2\n").replace("line 19\n", "LINE 19\n")


async def test_acp_turn_hunk_revert(app: App, project: Path, tmp_path: Path) -> None:
    target = project / "a.txt"
    target.write_text(OLD)
    script, log = tmp_path / "agent.json", tmp_path / "agent-log.jsonl"
    script.write_text(json.dumps({"prompts": [[
        {"ask": {"id": "w1", "title": "Write a.txt", "kind": "edit",
                 "input": {"path": str(target)}, "write": str(target), "content": NEW}},
        {"say": "written"}]]}))
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "tandem" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"acp_agents": {"fake": {
        "command": [sys.executable, str(FAKE_AGENT), str(script), str(log)]}}}))
    sid = await new_session(app, project)
    engine = app.turns.engine
    try:
        turn = await engine.accept(TurnSpec(session=sid, text="edit", provider="acp:fake",
                                            permission_mode="auto-edit"))
        ended = await engine.wait(sid, turn)
        assert ended.outcome == "succeeded" and ended.files_changed == ["a.txt"]
        entry = (await app.review.revert(sid, turn, "a.txt", 0, "@@ -1,5 +1,5 @@")).root
        assert entry["paths"] == ["a.txt"]
        assert target.read_text() == OLD.replace("line 19\n", "LINE 19\n")
    finally:
        await app.turns.aclose()
