"""Images and ACP agents: an image block goes only to an agent whose initialize reply
advertises ``promptCapabilities.image``; any other agent refuses the request, one
sentence, before a prompt is sent and with nothing journaled.

A real agent process (fake_agent.py over real pipes), through the `turns/send`
handler and the engine.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from test_acp_fake_agent import run
from test_acp_robustness import _configure

from tandem.adapters import turns as turn_api
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.events import RecordingSink as EventRecorder
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import NewParams
from tandem.protocol.turns import SendParams
from tandem.store.entry_cache import journal_dicts

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")


def _prompts(log: Path) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return [e["params"] for e in lines if e["method"] == "session/prompt"]


@pytest.mark.parametrize("takes", [True, False])
def test_an_acp_agent_gets_an_image_only_when_it_says_it_takes_them(
        tmp_path: Path, root: Path, takes: bool) -> None:
    log = _configure(tmp_path, {"capabilities": {"image": takes},
                                "prompts": [[{"say": "a pixel"}]]})
    (root / "shot.png").write_bytes(PNG)

    async def scenario() -> tuple[App, str, TandemError | None]:
        app = App(home=tmp_path / "home", events=EventRecorder())
        refused = None
        try:
            sid = (await new(app, NewParams(cwd=str(root)))).id
            params = SendParams(session=sid, text="what is it?", provider="acp:fake",
                                images=[{"path": str(root / "shot.png")}])
            try:
                accepted = await turn_api.send(app, params)
                ended = await app.turns.engine.wait(sid, accepted.turn)
                assert ended.outcome == "succeeded", ended.error
            except TandemError as e:
                refused = e
        finally:
            await app.turns.aclose()
        return app, sid, refused

    app, sid, refused = run(scenario())
    entries = journal_dicts(app.sessions.journal(sid))
    if takes:
        assert refused is None
        prompt = _prompts(log)[0]
        assert prompt["images"] == [{"mime_type": "image/png",
                                     "data": base64.b64encode(PNG).decode()}]
        assert "what is it?" in str(prompt["text"])
        user = next(e for e in entries if e["type"] == "user")
        assert user["images"][0]["media_type"] == "image/png"
    else:
        assert refused is not None and refused.code == "unsupported"
        assert "does not take images" in refused.message
        assert "promptCapabilities.image" in refused.message
        assert _prompts(log) == []  # nothing was sent
        assert not [e for e in entries if e["type"] in ("turn_start", "user")]
