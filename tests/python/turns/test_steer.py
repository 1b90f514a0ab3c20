"""Steer: guidance given to a running turn goes with its next model request.

End to end on a real journal, the real turn engine, the real queue and the
real fake OpenAI server (real HTTP): the first step calls a tool and waits
for a permission answer; the user steers meanwhile; the turn's second
request carries the guidance as a user message after the tool's result, in
the same turn, and the journal holds it as a ``steer`` entry the next turn's
context keeps. A steer the turn ends before taking goes first in the queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec
from pydantic import ValidationError

from tandem.adapters import turns as turn_api
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import NewParams
from tandem.protocol.turns import QueueParams, SendParams, SessionParams, SteerParams
from tandem.sessions.projection import project
from tandem.store.entry_cache import journal_dicts
from tandem.turns import queue

WRITE = Reply(text="writing", tool_calls=[ToolCallSpec(name="write_file",
                                                       input={"path": "a.txt",
                                                              "content": "a\n"})])
STEER = "use b.txt instead, and say so"

Body = Callable[[App, str, FakeOpenAI], Awaitable[None]]


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replies: list[Reply],
        body: Body) -> RecordingSink:
    """Run BODY against a fresh app whose default provider is the fake OpenAI server."""
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    events = RecordingSink()

    async def main() -> None:
        app = App(home=tmp_path / "home", events=events)
        with FakeOpenAI(replies) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
            app.turns.config.default_provider = "openai:m"
            info = await new(app, NewParams(cwd=str(root)))
            try:
                await body(app, info.id, fake)
            finally:
                if "queue" in app.__dict__:
                    await app.queue.background_done()
                await app.turns.aclose()
                app.sessions.close()

    asyncio.run(main())
    return events


async def waiting(app: App, sid: str) -> str:
    """The interaction id the running turn of SID waits on (after it asked)."""
    for _ in range(500):
        running = app.turns.engine.running.get(sid)
        if running is not None and running.sink.pending:
            return next(iter(running.sink.pending))
        await asyncio.sleep(0.01)
    raise AssertionError("the turn never asked")


async def settle(app: App, sid: str) -> None:
    """Wait until no turn runs in SID and the queue sent what it sends."""
    for _ in range(1000):
        if "queue" in app.__dict__:
            await app.queue.background_done()
        running = app.turns.engine.running.get(sid)
        if running is None:
            await asyncio.sleep(0.02)
            busy = "queue" in app.__dict__ and app.queue._tasks
            if app.turns.engine.running.get(sid) is None and not busy:
                return
        else:
            await asyncio.shield(running.task)
    raise AssertionError("the session never settled")


def entries(app: App, sid: str) -> list[Any]:
    return list(journal_dicts(app.sessions.journal(sid)))


def chat_bodies(fake: FakeOpenAI) -> list[dict[str, Any]]:
    return [r.body for r in fake.api_requests("/v1/chat/completions")]


def test_a_steer_given_during_a_tool_reaches_the_next_request_of_the_same_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(app: App, sid: str, fake: FakeOpenAI) -> None:
        first = await turn_api.send(app, SendParams(session=sid, text="write a"))
        question = await waiting(app, sid)  # the tool call waits for the answer
        reply = await turn_api.steer(app, SteerParams(session=sid, text=STEER))
        assert (reply.turn, reply.waiting) == (first.turn, 1)
        assert len(chat_bodies(fake)) == 1  # nothing sent yet: it waits for the next step
        pending = (await turn_api.queue_list(app, SessionParams(session=sid))).steers
        assert [s.text for s in pending] == [STEER] and pending[0].given  # the view's row
        app.turns.engine.answer(sid, question, "allow_once")
        await settle(app, sid)
        assert (await turn_api.queue_list(app, SessionParams(session=sid))).steers == []
        bodies = chat_bodies(fake)
        assert len(bodies) == 2
        second = bodies[1]["messages"]
        # After the tool's result, before the model's next answer: a user message.
        assert second[-2]["role"] == "tool"
        assert second[-1] == {"role": "user", "content": STEER}
        got = entries(app, sid)
        kinds = [(e["type"], e.get("turn")) for e in got if e.get("turn") == first.turn]
        assert [k for k, _t in kinds].count("turn_start") == 1  # one turn, not two
        i = [e["type"] for e in got].index("steer")
        steer = got[i]
        assert steer["text"] == STEER and steer["turn"] == first.turn and steer["given"]
        assert got[i - 1]["type"] == "tool_result" and got[i + 1]["type"] == "assistant"
        # The next turn's context keeps the steer where the model saw it.
        context = project(got)
        assert [m.role for m in context] == ["user", "assistant", "tool", "user", "assistant"]
        assert context[3].text == STEER
        ends = [e for e in got if e["type"] == "turn_end"]
        assert [e["outcome"] for e in ends] == ["succeeded"]
        assert queue.fold(got).items == []  # taken: nothing left for the queue
        # A later turn sends it again, as part of the conversation.
        await turn_api.send(app, SendParams(session=sid, text="next"))
        await settle(app, sid)
        third = chat_bodies(fake)[2]["messages"]
        assert {"role": "user", "content": STEER} in third
        assert third[-1] == {"role": "user", "content": "next"}

    run(tmp_path, monkeypatch, [WRITE, Reply(text="wrote b"), Reply(text="ok")], body)


def test_a_steer_the_turn_ends_before_taking_goes_as_the_next_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(app: App, sid: str, fake: FakeOpenAI) -> None:
        await turn_api.send(app, SendParams(session=sid, text="write a"))
        question = await waiting(app, sid)
        app.turns.engine.answer(sid, question, "allow_once")
        # The second (last) request streams slowly: steer while it does.
        for _ in range(500):
            if len(chat_bodies(fake)) == 2:
                break
            await asyncio.sleep(0.01)
        await turn_api.steer(app, SteerParams(session=sid, text="also add a test"))
        await settle(app, sid)
        got = entries(app, sid)
        assert [e["type"] for e in got].count("steer") == 0  # no request took it
        # It went on as the next turn (the first one ended well), like a queued message.
        assert [e["text"] for e in got if e["type"] == "user"] == ["write a",
                                                                   "also add a test"]
        sent = [e for e in got if e["type"] == "queue"]
        assert [(e["op"], e.get("front")) for e in sent] == [("add", True), ("sent", False)]
        assert chat_bodies(fake)[-1]["messages"][-1] == {"role": "user",
                                                         "content": "also add a test"}

    run(tmp_path, monkeypatch, [WRITE, Reply(text="wrote it, slowly", delay=0.1),
                                Reply(text="test added")], body)


def test_a_cancelled_turn_puts_its_steer_first_in_the_held_queue(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(app: App, sid: str, fake: FakeOpenAI) -> None:
        await turn_api.send(app, SendParams(session=sid, text="write a"))
        await waiting(app, sid)
        await turn_api.queue(app, QueueParams(session=sid, text="queued before"))
        await turn_api.steer(app, SteerParams(session=sid, text="steer one"))
        await turn_api.steer(app, SteerParams(session=sid, text="steer two"))
        await turn_api.cancel(app, SessionParams(session=sid))
        await settle(app, sid)
        held = await turn_api.queue_list(app, SessionParams(session=sid))
        assert [m.text for m in held.items] == ["steer one", "steer two", "queued before"]
        assert len({m.id for m in held.items}) == 3
        assert held.held == "turn 1 was cancelled"
        assert len(chat_bodies(fake)) == 1  # nothing more was sent

    run(tmp_path, monkeypatch, [WRITE], body)


def test_steering_with_no_turn_running_or_nothing_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(app: App, sid: str, fake: FakeOpenAI) -> None:
        with pytest.raises(TandemError) as err:
            await turn_api.steer(app, SteerParams(session=sid, text="go left"))
        assert err.value.code == "not-found" and "No turn is running" in err.value.message
        with pytest.raises(TandemError) as err:
            app.turns.engine.steer(sid, "   ")
        assert err.value.code == "invalid" and "empty" in err.value.message
        with pytest.raises(ValidationError):
            SteerParams(session=sid, text="")
        with pytest.raises(ValidationError):
            SteerParams(session=sid, text="x" * (queue.MAX_TEXT + 1))

    run(tmp_path, monkeypatch, [], body)


def test_the_fold_puts_front_adds_first() -> None:
    def e(seq: int, op: str, item: str, **fields: Any) -> Any:
        return {"type": "queue", "seq": seq, "ts": f"t{seq}", "op": op, "item": item,
                **fields}

    state = queue.fold([e(1, "add", "q1", text="queued")])
    written = [{**w, "seq": 2 + n, "ts": "t"}
               for n, w in enumerate(queue.steer_entries(state, ["s1", "s2"]))]
    after = queue.fold([e(1, "add", "q1", text="queued"), *written])
    assert [m.text for m in after.items] == ["s1", "s2", "queued"]
    assert after.added == 3 and len({m.id for m in after.items}) == 3
