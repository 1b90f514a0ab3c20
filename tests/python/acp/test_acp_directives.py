"""Directives through the whole stack with the real Claude Code ACP adapter.

The workspace request flow (`directives/act`) runs turns through the turn
engine with provider ``acp:claude`` (the adapter from npm, against the fake
Anthropic server). Every JSON-RPC message is observed on the wire (the
provider's own ``on_wire`` hook); nothing is stubbed. Skips, with the reason
printed, when npm or the adapter cannot be installed.
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
from fakes.script import Reply, Script, ToolCallSpec, last_user_text

from tandem.adapters import directives as api
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.protocol import directives as dp
from tandem.protocol.sessions import NewParams
from tandem.providers.acp import AcpProvider
from tandem.turns.engine import TurnSpec

TURN_TIMEOUT = 120


@pytest.fixture(scope="module")
def adapter() -> Path:
    try:
        return ensure_adapter()
    except AdapterUnavailable as exc:
        print(f"\nskipping directive ACP tests: {exc}", file=sys.stderr)
        pytest.skip(f"Claude Code ACP adapter unavailable: {exc}")


def test_directives_open_fresh_acp_sessions_and_discussion_cannot_write(
        adapter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("hello world\n")
    forbidden = root / "forbidden.txt"
    agent_home = tmp_path / "agent-home"
    agent_home.mkdir()
    tandem_home = tmp_path / "tandem-home"

    def model(body: dict[str, Any]) -> Reply | None:
        if not body.get("tools"):
            return Reply(text="OK")  # the adapter's side requests (titles…)
        last = last_user_text(body)
        if "please write forbidden" in last:
            return Reply(text="Writing it.", tool_calls=[ToolCallSpec(
                name="Write", input={"file_path": str(forbidden), "content": "no\n"})])
        return Reply(text=f"ANSWER[{last.strip()[-30:]}]")

    fake = FakeAnthropic(Script.of(model)).start()
    wire: list[tuple[str, dict[str, Any]]] = []
    original = AcpProvider.__init__

    def observed(self: AcpProvider, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("on_wire", lambda d, m: wire.append((d, m)))
        original(self, *args, **kwargs)

    monkeypatch.setattr(AcpProvider, "__init__", observed)
    env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "sk-fake-key",
           "HOME": str(agent_home), "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
           "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}

    async def scenario() -> str:
        app = App(home=tandem_home)
        service = app.turns
        service.config.acp_agents = {"claude": {"command": [str(adapter)], "env": env}}
        sid = (await new(app, NewParams(cwd=str(root)))).id

        async def chat(text: str) -> None:
            turn = await service.engine.accept(TurnSpec(session=sid, text=text,
                                                        provider="acp:claude"))
            ended = await asyncio.wait_for(service.engine.wait(sid, turn), TURN_TIMEOUT)
            assert ended.outcome == "succeeded", ended.error

        async def act(directive: str, text: str) -> Any:
            reply = await api.act(app, dp.ActParams(
                root=str(root), id=directive, action="discuss", text=text,
                provider="acp:claude", session=sid))
            return await asyncio.wait_for(service.engine.wait(sid, reply.turn),
                                          TURN_TIMEOUT)

        try:
            await chat("root one marker-R1")
            for request in ("directive alpha marker-DA", "directive beta marker-DB"):
                await api.create(app, dp.CreateParams(
                    root=str(root), path="a.txt", start_line=1, end_line=1,
                    text="hello world\n", request=request))
            assert (await act("D1", "what now?")).outcome == "succeeded"
            ended = await act("D2", "please write forbidden.txt")
            assert ended.outcome == "succeeded", ended.error
            await chat("root two marker-R2")
        finally:
            await service.aclose()
        return sid

    try:
        sid = asyncio.run(scenario())
    finally:
        fake.stop()

    sent = [m for d, m in wire if d == "outgoing"]
    news = [m for m in sent if m.get("method") == "session/new"]
    assert len(news) == 3  # the root chat, then one fresh session per directive request
    assert not [m for m in sent if m.get("method") in ("session/load", "session/resume")]
    new_ids = {m["id"] for m in news}
    opened = [m["result"]["sessionId"] for d, m in wire
              if d == "incoming" and m.get("id") in new_ids and "result" in m]
    assert len(set(opened)) == 3
    journal = next((tandem_home / "sessions").rglob("*.jsonl"))
    entries = [json.loads(x) for x in journal.read_text().splitlines()[1:]]
    acp_ids = {e["acp_session_id"] for e in entries if e["type"] == "acp_session"}
    assert acp_ids == {opened[0]}  # only the root chat's conversation is stored
    for path in tandem_home.rglob("*"):
        if path.is_file():
            text = path.read_bytes()
            for directive_id in opened[1:]:
                assert directive_id.encode() not in text, f"ACP id of a directive in {path}"

    bodies = [json.dumps(r.body.get("messages")) for r in fake.api_requests("/v1/messages")
              if isinstance(r.body, dict) and r.body.get("tools")]
    alpha = [b for b in bodies if "marker-DA" in b]
    beta = [b for b in bodies if "marker-DB" in b]
    root_two = [b for b in bodies if "marker-R2" in b]
    assert alpha and beta and root_two
    assert all("marker-R1" not in b and "marker-DB" not in b for b in alpha)
    assert all("marker-R1" not in b and "marker-DA" not in b for b in beta)
    assert all("marker-R1" in b and "marker-DA" not in b and "marker-DB" not in b
               for b in root_two)

    # The discussion's write was refused through ACP permission, without asking.
    assert not forbidden.exists()
    d2_turn = next(e["turn"] for e in entries
                   if e["type"] == "directive_open" and e["directive"] == "D2")
    results = [e for e in entries if e["type"] == "tool_result" and e["turn"] == d2_turn]
    assert results and all(r["status"] == "refused" for r in results)
    assert not [e for e in entries if e["type"] == "interaction"]
    answers = [m for m in sent if "result" in m and isinstance(m["result"], dict)
               and "outcome" in m["result"]]
    assert answers and answers[0]["result"]["outcome"]["optionId"] == "reject"
    assert sid
