"""Turns that run on the real openhands-agent-server, its agent talking to tandem's fake LLM.

What the server and the fake LLM received is the evidence (files in the
server's working dir, the LLM requests, the server's conversations), not
what tandem says about itself.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.providers.base import PermissionRequest

from .agent_server import Missing, RunningServer, run_server
from .engine_helpers import (
    LLM_KEY,
    agent_requests,
    agent_script,
    answering,
    attached_session,
    chat,
    configure,
    conversations_on,
    directive,
    entries,
    run_command,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    try:
        with run_server(api_key="tandem-remote-engine") as srv:
            yield srv
    except Missing as e:
        print(f"\nSKIP remote engine: {e}", file=sys.stderr)
        pytest.skip(str(e))


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    yield App(home=tmp_path / "home")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def test_no_key_goes_without_forward_keys(server: RunningServer, app: App,
                                                project: Path) -> None:
    with FakeOpenAI(agent_script(Reply(text="never"))) as fake:
        before = len(conversations_on(server))
        for kw in ({"forward_keys": False}, {"hosts": False}):
            configure(app, server, fake, **kw)  # type: ignore[arg-type]
            sid, _wd = await attached_session(app, project, server)
            with pytest.raises(TandemError) as err:
                await chat(app, sid, "hello")
            assert err.value.code == "no-credentials"
            assert "tandem-remote-hosts" in err.value.message
            assert ":forward-keys" in err.value.message
        # Nothing reached the server or the LLM.
        assert len(conversations_on(server)) == before
        assert fake.requests == []
    await app.turns.aclose()


async def test_chat_turns_run_on_the_server(server: RunningServer, app: App,
                                            project: Path) -> None:
    script = agent_script(run_command("echo hi > hi.txt && cat hi.txt"),
                          Reply(text="All done: wrote hi.txt"),
                          Reply(text="Second answer"))
    with FakeOpenAI(script) as fake:
        configure(app, server, fake)
        sid, wd = await attached_session(app, project, server)
        asked: list[PermissionRequest] = []
        first = await chat(app, sid, "make hi.txt", answering("allow_once", asked))
        assert first.outcome == "succeeded", first.error
        # The command ran on the server, in the target's working dir, not locally.
        assert (Path(wd) / "hi.txt").read_text() == "hi\n"
        assert not (project / "hi.txt").exists()
        assert [q.tool for q in asked] == ["terminal"] and asked[0].kind == "execute"
        log = entries(app, sid)
        call = next(e for e in log if e["type"] == "tool_call")
        result = next(e for e in log if e["type"] == "tool_result")
        assert call["name"] == "terminal" and call["kind"] == "execute"
        assert call["input"]["command"] == "echo hi > hi.txt && cat hi.txt"
        assert result["call_id"] == call["call_id"] and result["status"] == "completed"
        assert "hi" in result["output"]
        assert [e["text"] for e in log if e["type"] == "assistant"] == ["All done: wrote hi.txt"]
        conv = [e for e in log if e["type"] == "acp_session"]
        assert len(conv) == 1
        end = [e for e in log if e["type"] == "turn_end"][-1]
        assert end["usage"]["output_tokens"] > 0

        second = await chat(app, sid, "second question")
        assert second.outcome == "succeeded", second.error
        assert second.answer == "Second answer"
        # Same conversation: the agent's last request carries turn 1's exchange.
        last = agent_requests(fake)[-1]
        said = str(last["messages"])
        assert "make hi.txt" in said and "second question" in said
        log = entries(app, sid)
        assert {e["acp_session_id"] for e in log if e["type"] == "acp_session"} == {
            conv[0]["acp_session_id"]}
        # The key reached the LLM, from the server's agent, and no file of tandem's.
        assert all(r["headers"].get("authorization") == f"Bearer {LLM_KEY}"
                   for r in fake.requests)
        for path in (app.home).rglob("*"):
            if path.is_file():
                assert LLM_KEY.encode() not in path.read_bytes(), path
    await app.turns.aclose()


async def test_directive_runs_in_a_conversation_of_its_own(server: RunningServer, app: App,
                                                           project: Path) -> None:
    script = agent_script(Reply(text="chat answer"), Reply(text="directive answer"))
    with FakeOpenAI(script) as fake:
        configure(app, server, fake)
        sid, _wd = await attached_session(app, project, server)
        before = {c["id"] for c in conversations_on(server)}
        assert (await chat(app, sid, "chat question")).outcome == "succeeded"
        ended = await directive(app, sid, "DIRECTIVE PROMPT", "implement")
        assert ended.outcome == "succeeded", ended.error
        assert ended.answer == "directive answer"
        new_ids = {c["id"] for c in conversations_on(server)} - before
        assert len(new_ids) == 2  # the chat's and the directive's
        # The directive's request carries its own prompt and nothing of the chat.
        said = str(agent_requests(fake)[-1]["messages"])
        assert "DIRECTIVE PROMPT" in said and "chat question" not in said
        log = entries(app, sid)
        assert len([e for e in log if e["type"] == "acp_session"]) == 1
    await app.turns.aclose()
