"""Integration: compaction of a root chat run by the real Claude Code ACP adapter
(installed by tests/acp_adapter.py) against the fake Anthropic server.

Nothing leaves the machine: ``ANTHROPIC_BASE_URL`` points at the fake and the
agent's HOME is a temporary directory. Skips, with the reason printed, when
npm or the adapter cannot be installed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from acp_adapter import AdapterUnavailable, ensure_adapter
from fakes.anthropic_server import FakeAnthropic
from fakes.script import Reply, Script, last_user_text

from tandem.adapters.sessions import compact
from tandem.app import App
from tandem.protocol.sessions import CompactParams

from .conftest import write_settings
from .sessions import chat, directive, entries, new_session

PROVIDER = "acp:claude"


@pytest.fixture(scope="module")
def adapter() -> Path:
    try:
        return ensure_adapter()
    except AdapterUnavailable as exc:
        print(f"\nskipping the Claude compaction test: {exc}", file=sys.stderr)
        pytest.skip(f"Claude Code ACP adapter unavailable: {exc}")


def _reply(body: dict[str, Any]) -> Reply | None:
    if not body.get("tools"):
        return Reply(text="OK")  # titles and other side requests
    last = last_user_text(body)
    if "Summarise the conversation in the transcript above" in last:
        return Reply(text="SUMMARY-CLAUDE-77: markers R1 and R3 were discussed.")
    return Reply(text=f"ANSWER[{last.strip()[-30:]}]")


def test_claude_root_chat_compacts_into_a_new_seeded_session(
        adapter: Path, app: App, project: Path, tmp_path: Path) -> None:
    agent_home = tmp_path / "agent-home"
    agent_home.mkdir()
    fake = FakeAnthropic(Script.of(_reply)).start()
    write_settings({"compaction_keep_turns": 1, "acp_agents": {"claude": {
        "command": [str(adapter)],
        "env": {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "sk-fake-key",
                "HOME": str(agent_home), "DISABLE_TELEMETRY": "1",
                "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}}}})

    async def main() -> str:
        sid = await new_session(app, project)
        try:
            for text in ("root one marker-R1", "root two marker-R2"):
                ended = await asyncio.wait_for(chat(app, sid, text, PROVIDER), 120)
                assert ended.outcome == "succeeded", ended.error
            ended = await asyncio.wait_for(
                directive(app, sid, "directive marker-DX", PROVIDER), 120)
            assert ended.outcome == "succeeded", ended.error
            ended = await asyncio.wait_for(chat(app, sid, "root three marker-R3", PROVIDER), 120)
            assert ended.outcome == "succeeded", ended.error
            reply = await asyncio.wait_for(compact(app, CompactParams(session=sid)), 180)
            assert reply.first_kept_turn == 4 and reply.acp_session_id
            ended = await asyncio.wait_for(chat(app, sid, "root four marker-R4", PROVIDER), 120)
            assert ended.outcome == "succeeded", ended.error
        finally:
            await app.turns.aclose()
        return sid

    try:
        sid = asyncio.run(main())
        bodies = [json.dumps(r.body) for r in fake.api_requests("/v1/messages")
                  if isinstance(r.body, dict) and r.body.get("tools")]
    finally:
        fake.stop()
    summary = next(b for b in bodies if "Summarise the conversation in the transcript" in b)
    assert "marker-R1" in summary and "marker-DX" not in summary
    last = bodies[-1]
    # The new ACP session holds the summary and the kept turn, not the old conversation.
    assert "marker-R4" in last and "SUMMARY-CLAUDE-77" in last and "marker-R3" in last
    assert "marker-R1" not in last and "marker-R2" not in last and "marker-DX" not in last
    journal = entries(app, sid)
    switches = [(e["acp_session_id"], e["how"]) for e in journal if e["type"] == "acp_session"]
    assert len(switches) == 2 and switches[0][1] == "new" and switches[1][1] == "seeded"
    assert switches[0][0] != switches[1][0]
