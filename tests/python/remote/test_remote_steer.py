"""Steering a turn that runs on the real openhands-agent-server (fake LLM behind it).

The evidence is what the server's agent sent the fake LLM (the steer as a
user message in the turn's next request, after every tool call's result)
and the journal (a ``steer`` entry inside the same turn, after those
results). The server takes the guidance only where its loop is stopped and
every call has its result: the idle after a refusal (tandem refuses the
calls waiting for confirmation when a steer waits: they never ran).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.providers.base import Message, PermissionAnswer, PermissionRequest
from tandem.remote.engine import SUPERSEDED
from tandem.turns.engine import DirectiveFrame, TurnSpec

from .agent_server import RunningServer, serve_for_tests
from .engine_helpers import (
    PROVIDER,
    TURN_LIMIT,
    agent_requests,
    agent_script,
    attached_session,
    configure,
    entries,
    run_command,
)

pytestmark = pytest.mark.anyio

STEER = "Use notes.md instead, please"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    yield from serve_for_tests("tandem-remote-steer", "remote steer")


def said(message: dict[str, Any]) -> str:
    """The text of one message the agent sent the LLM (a string or content parts)."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content or "")


async def until(check: Any, what: str, seconds: float = 60.0) -> None:
    """Wait until CHECK() is true, or fail naming WHAT."""
    for _ in range(int(seconds * 20)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def steering(app: App, sid: str, answer: PermissionAnswer,
             asked: list[PermissionRequest]) -> Any:
    """An asker that steers the running turn while it is asked, then answers ANSWER."""
    async def ask(request: PermissionRequest, _interaction: str) -> PermissionAnswer:
        asked.append(request)
        app.turns.engine.steer(sid, STEER)
        return answer
    return ask


async def steered_while_asked(app: App, server: RunningServer, fake: FakeOpenAI,
                              project: Path, answer: PermissionAnswer,
                              ) -> tuple[str, str, int, list[PermissionRequest]]:
    """One turn whose first tool call is asked about; the steer comes during the question,
    then ANSWER. (session, server dir, turn, questions), once the turn ended well."""
    configure(app, server, fake)
    sid, wd = await attached_session(app, project, server)
    asked: list[PermissionRequest] = []
    engine = app.turns.engine
    turn = await engine.accept(TurnSpec(session=sid, text="write it", provider=PROVIDER),
                               steering(app, sid, answer, asked))
    ended = await asyncio.wait_for(engine.wait(sid, turn), TURN_LIMIT)
    assert ended.outcome == "succeeded", ended.error
    return sid, wd, turn, asked


def turn_kinds(log: list[dict[str, Any]], turn: int) -> list[str]:
    return [e["type"] for e in log if e.get("turn") == turn]


async def test_a_steer_given_while_the_model_answers_goes_with_the_turns_next_request(
        server: RunningServer, app: App, project: Path) -> None:
    """Given during the LLM call that asks for a tool: that call is not run (superseded,
    never asked about), and the next request carries its refusal, then the steer."""
    slow_call = run_command("echo a > a.txt", text="I will write a.txt first.")
    slow_call.delay = 0.2
    script = agent_script(slow_call, Reply(text="Steered: notes.md it is"))
    with FakeOpenAI(script) as fake:
        configure(app, server, fake)
        sid, wd = await attached_session(app, project, server)
        engine = app.turns.engine
        asked: list[PermissionRequest] = []

        async def ask(request: PermissionRequest, _interaction: str) -> PermissionAnswer:
            asked.append(request)
            return "allow_once"

        turn = await engine.accept(TurnSpec(session=sid, text="write a", provider=PROVIDER), ask)
        await until(lambda: len(agent_requests(fake)) == 1, "the agent's first LLM request")
        given, waiting = engine.steer(sid, STEER)
        assert (given, waiting) == (turn, 1)
        # The view's pending row: given, not taken yet.
        assert [s.text for s in app.queue.list(sid).steers] == [STEER]
        ended = await asyncio.wait_for(engine.wait(sid, turn), TURN_LIMIT)
        assert ended.outcome == "succeeded", ended.error
        assert ended.answer.endswith("Steered: notes.md it is")
        assert ended.steers_left == []
        assert app.queue.list(sid).steers == []
        assert asked == []  # superseded: nobody was asked about a call that never ran
        assert not (Path(wd) / "a.txt").exists()
        # The agent's next request, inside the same turn: the call's refusal, then the steer.
        requests = agent_requests(fake)
        assert len(requests) == 2
        second = requests[1]["messages"]
        assert second[-1]["role"] == "user" and said(second[-1]) == STEER
        assert second[-2]["role"] == "tool" and SUPERSEDED in said(second[-2])
        assert second[-3]["role"] == "assistant" and second[-3].get("tool_calls")
        assert STEER not in str(requests[0])
        log = entries(app, sid)
        kinds = turn_kinds(log, turn)
        assert kinds.count("turn_start") == 1 and kinds.count("steer") == 1
        i = kinds.index("steer")
        assert kinds[i - 1] == "tool_result" and "assistant" in kinds[i + 1:]
        result = next(e for e in log if e["type"] == "tool_result")
        assert result["status"] == "refused" and SUPERSEDED in result["output"]
        steer = next(e for e in log if e["type"] == "steer")
        assert steer["text"] == STEER and steer["turn"] == turn and steer["given"]
        assert not [e for e in log if e["type"] == "queue"]
    await app.turns.aclose()


async def test_a_steer_given_while_the_user_is_asked_goes_with_the_refusal(
        server: RunningServer, app: App, project: Path) -> None:
    """Given during the permission question, answered no: the refusal, then the steer."""
    script = agent_script(run_command("echo b > b.txt"), Reply(text="Steered after no"))
    with FakeOpenAI(script) as fake:
        sid, wd, turn, asked = await steered_while_asked(app, server, fake, project, "reject")
        assert [q.tool for q in asked] == ["terminal"]
        assert not (Path(wd) / "b.txt").exists()
        second = agent_requests(fake)[1]["messages"]
        assert second[-1]["role"] == "user" and said(second[-1]) == STEER
        assert second[-2]["role"] == "tool" and "the user refused" in said(second[-2])
        kinds = turn_kinds(entries(app, sid), turn)
        assert kinds.index("steer") == kinds.index("tool_result") + 1
    await app.turns.aclose()


async def test_a_steer_given_while_the_user_is_asked_and_allows_waits_for_the_next_stop(
        server: RunningServer, app: App, project: Path) -> None:
    """Allowed, the call runs and the agent asks the LLM again at once: the steer is not
    in that request; it goes at the next stop (the next tool call, superseded)."""
    script = agent_script(run_command("echo c > c.txt"), run_command("echo d > d.txt"),
                          Reply(text="Steered at the second stop"))
    with FakeOpenAI(script) as fake:
        sid, wd, turn, asked = await steered_while_asked(app, server, fake, project,
                                                         "allow_once")
        assert (Path(wd) / "c.txt").read_text() == "c\n"  # the allowed call ran
        assert not (Path(wd) / "d.txt").exists()  # the next one was superseded
        assert len(asked) == 1
        requests = agent_requests(fake)
        assert len(requests) == 3
        assert STEER not in str(requests[1])
        third = requests[2]["messages"]
        assert said(third[-1]) == STEER and SUPERSEDED in said(third[-2])
        kinds = turn_kinds(entries(app, sid), turn)
        assert kinds.count("steer") == 1 and kinds.count("turn_start") == 1
    await app.turns.aclose()


async def test_a_steer_the_remote_turn_ends_before_taking_goes_as_the_next_turn(
        server: RunningServer, app: App, project: Path) -> None:
    """Given while the last answer streams: no stop follows, so it joins the queue's
    front and goes as the next turn (the first ended well), in the same conversation."""
    slow = Reply(text="A long final answer, streamed slowly, word by word.", delay=0.1)
    script = agent_script(slow, Reply(text="Now about notes.md"))
    with FakeOpenAI(script) as fake:
        configure(app, server, fake)
        app.turns.config.default_provider = PROVIDER  # what the queue's send uses
        sid, _wd = await attached_session(app, project, server)
        engine = app.turns.engine
        turn = await engine.accept(TurnSpec(session=sid, text="answer", provider=PROVIDER))
        await until(lambda: len(agent_requests(fake)) == 1, "the agent's first LLM request")
        engine.steer(sid, STEER)
        ended = await asyncio.wait_for(engine.wait(sid, turn), TURN_LIMIT)
        assert ended.outcome == "succeeded", ended.error
        assert ended.steers_left == [STEER]
        await until(lambda: len(agent_requests(fake)) == 2, "the queued steer's turn")
        await until(lambda: engine.running.get(sid) is None
                    and [e for e in entries(app, sid) if e["type"] == "turn_end"][1:],
                    "the second turn's end")
        log = entries(app, sid)
        assert not [e for e in log if e["type"] == "steer"]
        assert [e["text"] for e in log if e["type"] == "user"] == ["answer", STEER]
        assert [(e["op"], e.get("front")) for e in log if e["type"] == "queue"] == [
            ("add", True), ("sent", False)]
        assert said(agent_requests(fake)[1]["messages"][-1]) == STEER
    await app.turns.aclose()


async def test_steering_a_remote_session_without_a_turn_or_a_directive_says_why(
        server: RunningServer, app: App, project: Path) -> None:
    slow = Reply(text="Discussing, slowly enough to be steered.", delay=0.1)
    with FakeOpenAI(agent_script(Reply(text="done"), slow)) as fake:
        configure(app, server, fake)
        sid, _wd = await attached_session(app, project, server)
        engine = app.turns.engine
        turn = await engine.accept(TurnSpec(session=sid, text="hi", provider=PROVIDER))
        with pytest.raises(TandemError) as err:
            engine.steer(sid, "  \n")
        assert err.value.code == "invalid"
        await asyncio.wait_for(engine.wait(sid, turn), TURN_LIMIT)
        with pytest.raises(TandemError) as err:  # the turn ended
            engine.steer(sid, STEER)
        assert err.value.code == "not-found" and "No turn is running" in err.value.message
        frame = DirectiveFrame("w1", "D1", "discuss", 1)
        turn = await engine.accept(TurnSpec(
            session=sid, text="discuss", provider=PROVIDER, permission_mode="ask",
            messages=[Message(role="user", text="discuss")], read_only=True,
            directive=frame))
        with pytest.raises(TandemError) as err:
            engine.steer(sid, STEER)
        assert err.value.code == "unsupported" and "directive" in err.value.message
        ended = await asyncio.wait_for(engine.wait(sid, turn), TURN_LIMIT)
        assert ended.outcome == "succeeded", ended.error
        assert STEER not in str(agent_requests(fake))
    await app.turns.aclose()
