"""Turns that run on the real openhands-agent-server, its agent talking to tandem's fake LLM.

What the server and the fake LLM received is the evidence (files in the
server's working dir, the LLM requests, the server's conversations), not
what tandem says about itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.providers.base import PermissionAnswer, PermissionRequest
from tandem.turns.engine import TurnSpec

from .agent_server import RunningServer, serve_for_tests
from .engine_helpers import (
    LLM_KEY,
    PROVIDER,
    agent_requests,
    agent_script,
    answering,
    attached_session,
    chat,
    configure,
    conversation_state,
    conversations_on,
    directive,
    entries,
    run_command,
    server_events,
    sid_conversation,
)
from .socket_proxy import SocketProxy

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    yield from serve_for_tests("tandem-remote-engine", "remote engine")


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


async def test_chat_turns_run_on_the_server(server: RunningServer, app: App, project: Path,
                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger of the backend, httpx's included
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
        assert caplog.records and LLM_KEY not in caplog.text
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


@pytest.mark.parametrize("how", ["discussion", "rejected"])
async def test_a_refused_command_does_not_run_and_the_agent_goes_on(
        server: RunningServer, app: App, project: Path, how: str) -> None:
    """A discussion refuses without asking; in a chat the user's reject refuses."""
    script = agent_script(run_command("touch nope.txt"), Reply(text="went on"))
    with FakeOpenAI(script) as fake:
        configure(app, server, fake)
        sid, wd = await attached_session(app, project, server)
        asked: list[PermissionRequest] = []
        if how == "discussion":
            ended = await directive(app, sid, "DISCUSS THIS", "discuss",
                                    answering("allow_once", asked), read_only=True)
        else:
            ended = await chat(app, sid, "try it", answering("reject", asked))
        assert ended.outcome == "succeeded", ended.error
        assert ended.answer == "went on"  # the agent heard the refusal and answered
        assert len(asked) == (0 if how == "discussion" else 1)
        assert not (Path(wd) / "nope.txt").exists()
        log = entries(app, sid)
        result = next(e for e in log if e["type"] == "tool_result")
        assert result["status"] == "refused"
        if how == "discussion":
            assert "read-only" in result["output"]
        else:
            assert [e["answer"] for e in log if e["type"] == "interaction_answer"] == ["reject"]
    await app.turns.aclose()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def test_a_dropped_socket_loses_and_repeats_no_event(server: RunningServer, app: App,
                                                           project: Path) -> None:
    script = agent_script(run_command("echo one > one.txt"), run_command("echo two > two.txt"),
                          Reply(text="both written"))
    with FakeOpenAI(script) as fake, SocketProxy(_port(server.url)).running() as proxy:
        configure(app, server, fake, url=proxy.url)
        sid, wd = await attached_session(app, project, server, url=proxy.url)
        asked: list[PermissionRequest] = []

        async def ask(request: PermissionRequest, _interaction: str) -> PermissionAnswer:
            asked.append(request)
            if len(asked) == 1:
                # The network goes down while the agent runs the first command and
                # asks for the second: those events happen while no socket is open.
                proxy.drop_sockets(down_for=1.0)
            return "allow_once"

        ended = await chat(app, sid, "write both", ask)
        assert ended.outcome == "succeeded", ended.error
        assert ended.answer == "both written"
        assert proxy.socket_connects >= 2 and proxy.refused >= 1
        assert (Path(wd) / "two.txt").read_text() == "two\n"
        log = entries(app, sid)
        calls = [e["call_id"] for e in log if e["type"] == "tool_call"]
        results = [e["call_id"] for e in log if e["type"] == "tool_result"]
        # Each of the server's tool calls exactly once, in its order, each with its result.
        server_calls = [e["tool_call_id"] for e in server_events(server, sid_conversation(log))
                        if e.get("kind") == "ActionEvent"]
        assert calls == results == server_calls and len(calls) == 2
        assert [e["text"] for e in log if e["type"] == "assistant"] == ["both written"]
    await app.turns.aclose()


async def test_a_server_gone_for_good_fails_the_turn_by_name(server: RunningServer, app: App,
                                                             project: Path) -> None:
    script = agent_script(run_command("echo one"), Reply(text="never seen"))
    with FakeOpenAI(script) as fake, SocketProxy(_port(server.url)).running() as proxy:
        configure(app, server, fake, url=proxy.url)
        sid, _wd = await attached_session(app, project, server, url=proxy.url)

        async def ask(request: PermissionRequest, _interaction: str) -> PermissionAnswer:
            proxy.drop_sockets(for_ever=True)
            return "reject"

        ended = await chat(app, sid, "go", ask)
        assert ended.outcome == "failed"
        assert ended.error is not None and "reconnects failed" in ended.error
        assert proxy.url in ended.error
    await app.turns.aclose()


async def test_cancel_interrupts_the_server(server: RunningServer, app: App,
                                            project: Path) -> None:
    script = agent_script(run_command("sleep 30; echo late > late.txt"), Reply(text="late"))
    with FakeOpenAI(script) as fake:
        configure(app, server, fake)
        sid, wd = await attached_session(app, project, server)
        asked: list[PermissionRequest] = []
        engine = app.turns.engine
        turn = await engine.accept(TurnSpec(session=sid, text="wait", provider=PROVIDER),
                                   answering("allow_once", asked))
        for _ in range(600):
            if asked:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # the command runs on the server now
        assert engine.cancel(sid)
        ended = await asyncio.wait_for(engine.wait(sid, turn), 60)
        assert ended.outcome == "aborted"
        cid = sid_conversation(entries(app, sid))
        status = None
        for _ in range(100):  # what the server says: it stopped running
            status = conversation_state(server, cid)["execution_status"]
            if status != "running":
                break
            await asyncio.sleep(0.1)
        assert status in ("paused", "idle"), status
        assert not (Path(wd) / "late.txt").exists()
    await app.turns.aclose()


async def test_an_image_is_refused_before_anything_is_sent(server: RunningServer, app: App,
                                                          project: Path) -> None:
    from tandem.store.images import media_type
    from tandem.turns.images import Attachment
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
    with FakeOpenAI(agent_script(Reply(text="never"))) as fake:
        configure(app, server, fake)
        sid, _wd = await attached_session(app, project, server)
        before = len(conversations_on(server))
        spec = TurnSpec(session=sid, text="look", provider=PROVIDER,
                        images=[Attachment(png, media_type(png) or "", "shot.png")])
        with pytest.raises(TandemError) as err:
            await app.turns.engine.accept(spec)
        assert err.value.code == "unsupported"
        assert "remote engine" in err.value.message and "cannot take images" in err.value.message
        # Nothing reached the server or the LLM, and nothing was journaled.
        assert len(conversations_on(server)) == before
        assert fake.requests == []
        assert not [e for e in entries(app, sid) if e["type"] in ("turn_start", "user")]
    await app.turns.aclose()
