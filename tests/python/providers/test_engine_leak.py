"""Native turns through the real turn engine: the API key never reaches TANDEM_HOME or events.

Runs whole turns (journal, events, real checkpoints) against the fake
servers with a distinctive key given the way Emacs gives it (auth-source
credentials) and also present in the environment, then scans every file under
TANDEM_HOME and every published event for the key.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.script import Reply, ToolCallSpec
from native_helpers import FAMILIES, KEY, make_fake

from tandem.adapters.sessions import new
from tandem.app import App
from tandem.events import RecordingSink as EventRecorder
from tandem.protocol.sessions import NewParams
from tandem.providers.base import PermissionRequest
from tandem.turns.engine import TurnSpec

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("family", FAMILIES)
async def test_key_never_written_under_tandem_home(
    family: str, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "tandem-home"
    monkeypatch.setenv("TANDEM_HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    (workspace / ".env").write_text(f"TOKEN={KEY}\n")
    script = [
        Reply(status=429, headers={"retry-after": "0"}, message=f"slow down, {KEY}"),
        Reply(
            text="Let me look around.",
            tool_calls=[
                ToolCallSpec(name="shell", input={"command": "env; cat .env"}),
                ToolCallSpec(
                    name="edit_file",
                    input={"path": "a.txt", "old_text": "world", "new_text": "tandem"},
                ),
            ],
        ),
        Reply(text="Edited."),
        Reply(status=401, message=f"Incorrect API key provided: {KEY}"),
    ]
    events = EventRecorder()
    app = App(home=home, events=events)
    asked: list[PermissionRequest] = []

    async def asker(request: PermissionRequest, _title: str) -> str:
        asked.append(request)
        return "allow_once"

    with make_fake(family, script) as fake:
        base = fake.base_url + ("/v1" if family == "openai" else "")
        service = app.turns
        service.config.credentials = {family: {"api_key": KEY, "base_url": base}}
        info = await new(app, NewParams(cwd=str(workspace)))
        try:
            spec = TurnSpec(session=info.id, text="edit a.txt", provider=f"{family}:fake-model")
            first = await service.engine.accept(spec, asker)  # type: ignore[arg-type]
            ended = await service.engine.wait(info.id, first)
            assert ended.outcome == "succeeded", ended.error
            spec2 = TurnSpec(session=info.id, text="again", provider=f"{family}:fake-model")
            second = await service.engine.accept(spec2, asker)  # type: ignore[arg-type]
            ended2 = await service.engine.wait(info.id, second)
        finally:
            await service.aclose()
        sent = fake.api_requests("/v1/chat/completions" if family == "openai" else "/v1/messages")
    assert ended2.outcome == "failed" and "Incorrect API key provided: ***" in (ended2.error or "")
    assert (workspace / "a.txt").read_text() == "hello tandem\n"
    assert [a.tool for a in asked] == ["shell", "edit_file"]
    assert KEY in json.dumps(sent[0]["headers"])  # it did go to the API
    scanned = 0
    for path in home.rglob("*"):
        if path.is_file():
            scanned += 1
            assert KEY.encode() not in path.read_bytes(), f"key leaked into {path}"
    (journal,) = list((home / "sessions").rglob("*.jsonl"))
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    shell_result = next(e for e in entries if e["type"] == "tool_result")
    assert "TOKEN=***" in shell_result["output"] and "API_KEY" not in shell_result["output"]
    assert scanned >= 1
    assert KEY not in json.dumps(events.events, default=str)
    kinds = {kind for _, kind, _ in events.events}
    assert {"turn-started", "turn-ended"} <= kinds


@pytest.mark.parametrize("family", FAMILIES)
async def test_engine_cancel_mid_stream_ends_aborted(
    family: str, workspace: Path, tmp_path: Path
) -> None:
    import anyio

    home = tmp_path / "home"
    events = EventRecorder()
    app = App(home=home, events=events)
    with make_fake(family, [Reply(text="streaming, then silence", stall=True)]) as fake:
        base = fake.base_url + ("/v1" if family == "openai" else "")
        service = app.turns
        service.config.credentials = {family: {"api_key": KEY, "base_url": base}}
        info = await new(app, NewParams(cwd=str(workspace)))
        try:
            spec = TurnSpec(session=info.id, text="talk", provider=f"{family}:fake-model")
            turn = await service.engine.accept(spec)
            with anyio.fail_after(5):
                while (
                    "".join(p.get("text", "") for _, kind, p in events.events if kind == "delta")
                    != "streaming, then silence"
                ):
                    await anyio.sleep(0.01)
            assert service.engine.cancel(info.id)
            ended = await service.engine.wait(info.id, turn)
        finally:
            await service.aclose()
    assert ended.outcome == "aborted"
    assert ended.answer == "streaming, then silence"
