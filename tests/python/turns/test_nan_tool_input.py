"""A non-finite number in a model's tool input is a tool error the model sees.

Through the real turn engine and journal, against both fake wire formats:
the call fails with a sentence, the model gets that result and answers, the
turn succeeds, and the journal on disk holds no ``NaN`` / ``Infinity``.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropic
from fakes.http_base import FakeServer
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec

from tandem.adapters.sessions import new
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.sessions import NewParams
from tandem.turns.engine import TurnSpec


def _fake(family: str, script: list[Reply]) -> FakeServer:
    return FakeOpenAI(script) if family == "openai" else FakeAnthropic(script)


def _env(family: str, fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    if family == "openai":
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    else:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")


def _no_constant(name: str) -> None:
    raise AssertionError(f"journal holds the non-JSON number {name}")


@pytest.mark.parametrize("family", ["openai", "anthropic"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_tool_input_fails_the_call_not_the_turn(
        family: str, bad: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n")
    script = [Reply(tool_calls=[ToolCallSpec(
        name="read_file", input={"path": "a.txt", "offset": bad})]),
        Reply(text="I see the error; done.")]

    async def main() -> None:
        app = App(home=tmp_path / "home", events=RecordingSink())
        with _fake(family, script) as fake:
            _env(family, fake, monkeypatch)
            info = await new(app, NewParams(cwd=str(root)))
            service = app.turns
            try:
                turn = await service.engine.accept(TurnSpec(
                    session=info.id, text="read it", provider=f"{family}:m"))
                ended = await service.engine.wait(info.id, turn)
            finally:
                await service.aclose()
            posts = [r for r in fake.requests if r["method"] == "POST"]
            second = json.dumps(posts[-1].body)
        assert ended.outcome == "succeeded", ended.error
        journal = app.sessions.journal(info.id)
        results = [e.model_dump() for e in journal.entries() if e.type == "tool_result"]
        assert len(results) == 1 and results[0]["status"] == "failed", results
        output = json.dumps(results[0])
        assert "not a finite number" in output and "internal error" not in output
        assert "not a finite number" in second  # the model saw the error
        for line in journal.path.read_text().splitlines():
            json.loads(line, parse_constant=_no_constant)

    asyncio.run(main())
