"""Compaction of an ACP root chat against the scripted ACP agent (a real process
speaking ACP over stdio, tests/python/acp/fake_agent.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tandem.adapters.sessions import compact
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import CompactParams

from .conftest import file_hash, write_settings
from .sessions import chat, directive, entries, journal_path, new_session

FAKE_AGENT = Path(__file__).resolve().parents[1] / "acp" / "fake_agent.py"
PROVIDER = "acp:fake"


def _agent(tmp_path: Path, script: dict[str, Any]) -> Path:
    """Configure the fake agent with SCRIPT; return its log file."""
    script_path, log = tmp_path / "agent.json", tmp_path / "agent-log.jsonl"
    script_path.write_text(json.dumps(script))
    write_settings({"compaction_keep_turns": 1, "acp_agents": {"fake": {
        "command": [sys.executable, str(FAKE_AGENT), str(script_path), str(log)]}}})
    return log


def _log(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _prompts(log: Path) -> list[dict[str, Any]]:
    return [r["params"] for r in _log(log) if r["method"] == "session/prompt"]


def test_acp_root_chat_switches_to_a_seeded_session(
        app: App, project: Path, tmp_path: Path) -> None:
    # process 1 answers turn 1, the directive, turn 3 and the summary;
    # process 2 (after the switch) answers the seed prompt and turn 4.
    log = _agent(tmp_path, {"capabilities": {"close": True, "resume": True},
                            "prompts": [[{"say": "one"}], [{"say": "two"}],
                                        [{"say": "three"}], [{"say": "SUMMARY-ACP-42"}]]})

    async def main() -> str:
        sid = await new_session(app, project)
        try:
            assert (await chat(app, sid, "ALPHA request", PROVIDER)).outcome == "succeeded"
            assert (await directive(app, sid, "DIRECTIVE SECRET prompt", PROVIDER)
                    ).outcome == "succeeded"
            assert (await chat(app, sid, "BRAVO request", PROVIDER)).outcome == "succeeded"
            reply = await compact(app, CompactParams(session=sid))
            assert reply.acp_session_id
            assert (await chat(app, sid, "CHARLIE request", PROVIDER)).outcome == "succeeded"
        finally:
            await app.turns.aclose()
        return sid

    sid = asyncio.run(main())
    prompts = _prompts(log)
    root, _directive, root_again, summary, seed, nxt = prompts
    assert root["session_id"] == root_again["session_id"]
    assert "ALPHA request" in summary["text"] and "SECRET" not in summary["text"]
    assert summary["session_id"] not in (root["session_id"], _directive["session_id"])
    # the summary's own session was closed; the old root ended with its process
    methods = [(r["method"], r["params"].get("session_id")) for r in _log(log)]
    assert ("session/close", summary["session_id"]) in methods
    assert [m for m, _ in methods].count("initialize") == 2
    # the new root session is seeded with the summary and the kept turn only
    new_id = seed["session_id"]
    assert new_id != root["session_id"]
    assert "SUMMARY-ACP-42" in seed["text"] and "BRAVO request" in seed["text"]
    assert "ALPHA" not in seed["text"] and "SECRET" not in seed["text"]
    # the next prompt goes to the new session, as a plain follow-up
    assert nxt["session_id"] == new_id and nxt["text"] == "CHARLIE request"
    journal = entries(app, sid)
    switches = [(e["acp_session_id"], e["how"]) for e in journal if e["type"] == "acp_session"]
    assert switches == [(root["session_id"], "new"), (new_id, "seeded")]
    kinds = [e["type"] for e in journal]
    at = kinds.index("compaction")
    assert kinds[at + 1] == "acp_session"
    assert journal[at]["first_kept_turn"] == 3

    # a backend restart continues the seeded session, not the old one
    app.sessions.manager.close()
    later = App(home=app.home, events=RecordingSink())

    async def resume() -> None:
        try:
            await chat(later, sid, "DELTA request", PROVIDER)
        finally:
            await later.turns.aclose()

    asyncio.run(resume())
    methods = [(r["method"], r["params"].get("session_id")) for r in _log(log)]
    assert methods[-2] == ("session/resume", new_id)
    assert methods[-1] == ("session/prompt", new_id)


def test_failed_acp_summary_changes_nothing_and_keeps_the_old_session(
        app: App, project: Path, tmp_path: Path) -> None:
    log = _agent(tmp_path, {"capabilities": {"close": True},
                            "prompts": [[{"say": "one"}], [{"say": "two"}],
                                        [{"error": "summary exploded"}], [{"say": "three"}]]})

    async def main() -> None:
        sid = await new_session(app, project)
        try:
            await chat(app, sid, "ALPHA request", PROVIDER)
            await chat(app, sid, "BRAVO request", PROVIDER)
            path = journal_path(app, sid)
            before = file_hash(path)
            with pytest.raises(TandemError) as err:
                await compact(app, CompactParams(session=sid))
            assert err.value.code == "provider" and "summary exploded" in err.value.message
            assert file_hash(path) == before
            assert (await chat(app, sid, "CHARLIE request", PROVIDER)).outcome == "succeeded"
        finally:
            await app.turns.aclose()

    asyncio.run(main())
    prompts = _prompts(log)
    assert prompts[-1]["session_id"] == prompts[0]["session_id"]
    assert prompts[-1]["text"] == "CHARLIE request"
    assert [r["method"] for r in _log(log)].count("initialize") == 1
