"""The queue: messages sent while a turn runs go as the next turns when it ends well.

The fold is tested on its own; the methods end to end on a real journal, the
real turn engine and the real fake OpenAI server (real HTTP): a turn waits
for a permission answer while messages are queued, then the backend sends
them, in order, as ordinary turns.
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
from tandem.protocol.turns import (
    QueueEditParams,
    QueueItemParams,
    QueueParams,
    QueueReply,
    SendParams,
    SessionParams,
)
from tandem.sessions.projection import project as projection
from tandem.store.entry_cache import journal_dicts
from tandem.store.journal import Journal
from tandem.turns import queue

WRITE = Reply(text="writing", tool_calls=[ToolCallSpec(name="write_file",
                                                       input={"path": "a.txt",
                                                              "content": "a\n"})])


def entry(seq: int, op: str, item: str = "", **fields: Any) -> Any:
    return {"type": "queue", "seq": seq, "ts": f"t{seq}", "op": op, "item": item, **fields}


def test_fold_keeps_order_edits_and_ends_a_hold_when_empty() -> None:
    entries = [entry(1, "add", "q1", text="one"), entry(2, "add", "q2", text="two"),
               entry(3, "edit", "q1", text="ONE"), entry(4, "hold", reason="turn 1 failed"),
               {"type": "user", "seq": 5, "ts": "t", "turn": 1, "text": "x"}]
    state = queue.fold(entries)
    assert [(m.id, m.text) for m in state.items] == [("q1", "ONE"), ("q2", "two")]
    assert state.held == "turn 1 failed"
    state = queue.fold([*entries, entry(6, "sent", "q1", sent_turn=2),
                        entry(7, "remove", "q2")])
    assert state.items == [] and state.held is None and state.added == 2
    # Ids never repeat, even after the queue emptied.
    assert queue.add_entry(state, "three")["item"] == "q3"


def test_fold_ignores_edits_of_unknown_items_and_resume_lifts_the_hold() -> None:
    state = queue.fold([entry(1, "add", "q1", text="a"), entry(2, "edit", "q9", text="b"),
                        entry(3, "hold", reason="r"), entry(4, "resume")])
    assert [m.text for m in state.items] == ["a"] and state.held is None


def test_projection_ignores_queue_entries() -> None:
    entries = [entry(1, "add", "q1", text="not yet conversation")]
    assert projection(entries) == []


def test_params_are_bounded() -> None:
    with pytest.raises(ValidationError):
        QueueParams(session="s", text="x" * (queue.MAX_TEXT + 1))
    with pytest.raises(ValidationError):
        QueueParams(session="s", text="")
    with pytest.raises(ValidationError):
        QueueItemParams(session="s", item="q" * 41)


Run = Callable[[App, str, FakeOpenAI], Awaitable[None]]


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replies: list[Reply],
        body: Run, home: Path | None = None) -> RecordingSink:
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    events = RecordingSink()

    async def main() -> None:
        app = App(home=home or tmp_path / "home", events=events)
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
    for _ in range(400):
        running = app.turns.engine.running.get(sid)
        if running is not None and running.sink.pending:
            return next(iter(running.sink.pending))
        await asyncio.sleep(0.01)
    raise AssertionError("the turn never asked")


async def waiting_with(app: App, sid: str, *queued: str) -> str:
    """Send a turn to SID that waits for an answer, queue QUEUED; the question's id."""
    await turn_api.send(app, SendParams(session=sid, text="write a"))
    question = await waiting(app, sid)
    for text in queued:
        await turn_api.queue(app, QueueParams(session=sid, text=text))
    return question


async def settle(app: App, sid: str) -> None:
    """Wait until no turn runs in SID and the queue sent what it sends."""
    for _ in range(1000):
        await app.queue.background_done()
        running = app.turns.engine.running.get(sid)
        if running is None:
            await asyncio.sleep(0.02)
            if app.turns.engine.running.get(sid) is None and not app.queue._tasks:
                return
        else:
            await asyncio.shield(running.task)
    raise AssertionError("the session never settled")


def user_texts(sid: str, app: App) -> list[str]:
    journal = app.sessions.journal(sid)
    return [e["text"] for e in journal_dicts(journal) if e["type"] == "user"]


def test_queued_during_a_permission_wait_goes_after_the_answer_in_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(app: App, sid: str, fake: FakeOpenAI) -> None:
        first = await turn_api.send(app, SendParams(session=sid, text="write a"))
        question = await waiting(app, sid)
        one = await turn_api.queue(app, QueueParams(session=sid, text="then b"))
        two = await turn_api.queue(app, QueueParams(session=sid, text="then c"))
        assert [m.id for m in two.items] == ["q1", "q2"] and two.running == first.turn
        assert one.sent_turn is None and two.held is None
        # The queued messages are no part of the running turn's context.
        assert not app.turns.engine.running[sid].cancelled
        app.turns.engine.answer(sid, question, "allow_once")
        await settle(app, sid)
        assert user_texts(sid, app) == ["write a", "then b", "then c"]
        listed = await turn_api.queue_list(app, SessionParams(session=sid))
        assert listed.items == [] and listed.held is None
        ends = [e for e in journal_dicts(app.sessions.journal(sid)) if e["type"] == "turn_end"]
        assert [e["outcome"] for e in ends] == ["succeeded"] * 3
        # Each queued message went as an ordinary turn: its request ends with it.
        bodies = [r.body for r in fake.api_requests("/v1/chat/completions")]
        assert bodies[-1]["messages"][-1]["content"] == "then c"

    run(tmp_path, monkeypatch, [WRITE, Reply(text="wrote"), Reply(text="b done"),
                                Reply(text="c done")], body)


def test_edit_and_remove_before_sending_and_unknown_ids(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(app: App, sid: str, fake: FakeOpenAI) -> None:
        question = await waiting_with(app, sid, "typo", "drop me")
        edited = await turn_api.queue_edit(app, QueueEditParams(session=sid, item="q1",
                                                                text="fixed"))
        assert [m.text for m in edited.items] == ["fixed", "drop me"]
        left = await turn_api.queue_remove(app, QueueItemParams(session=sid, item="q2"))
        assert [m.id for m in left.items] == ["q1"]
        for call in (turn_api.queue_remove(app, QueueItemParams(session=sid, item="q2")),
                     turn_api.queue_edit(app, QueueEditParams(session=sid, item="nope",
                                                              text="x"))):
            with pytest.raises(TandemError) as err:
                await call
            assert err.value.code == "not-found" and "sent or deleted" in err.value.message
        with pytest.raises(TandemError) as err:
            await turn_api.queue_edit(app, QueueEditParams(session=sid, item="q1", text="  "))
        assert err.value.code == "invalid"
        app.turns.engine.answer(sid, question, "allow_once")
        await settle(app, sid)
        assert user_texts(sid, app) == ["write a", "fixed"]

    run(tmp_path, monkeypatch, [WRITE, Reply(text="wrote"), Reply(text="ok")], body)


def test_a_thousand_messages_stop_at_the_limit_with_a_sentence(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(app: App, sid: str, fake: FakeOpenAI) -> None:
        await turn_api.send(app, SendParams(session=sid, text="write a"))
        await waiting(app, sid)
        refused = 0
        for n in range(1000):
            try:
                await turn_api.queue(app, QueueParams(session=sid, text=f"m{n}"))
            except TandemError as e:
                assert e.code == "invalid" and f"at most {queue.MAX_ITEMS}" in e.message
                refused += 1
        listed = await turn_api.queue_list(app, SessionParams(session=sid))
        assert len(listed.items) == queue.MAX_ITEMS and refused == 1000 - queue.MAX_ITEMS

    run(tmp_path, monkeypatch, [WRITE], body)


def test_a_cancelled_turn_holds_the_queue_until_it_is_sent_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(app: App, sid: str, fake: FakeOpenAI) -> None:
        await waiting_with(app, sid, "later")
        await turn_api.cancel(app, SessionParams(session=sid))
        await settle(app, sid)
        held = await turn_api.queue_list(app, SessionParams(session=sid))
        assert [m.text for m in held.items] == ["later"]
        assert held.held == "turn 1 was cancelled"
        assert user_texts(sid, app) == ["write a"]
        sent = await turn_api.queue_send(app, SessionParams(session=sid))
        assert sent.sent_turn == 2 and sent.items == []
        await settle(app, sid)
        assert user_texts(sid, app) == ["write a", "later"]
        with pytest.raises(TandemError) as err:
            await turn_api.queue_send(app, SessionParams(session=sid))
        assert err.value.code == "not-found"

    run(tmp_path, monkeypatch, [WRITE, Reply(text="later done")], body)


def test_a_failed_turn_holds_the_queue_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(app: App, sid: str, fake: FakeOpenAI) -> None:
        question = await waiting_with(app, sid, "later")
        app.turns.engine.answer(sid, question, "allow_once")
        await settle(app, sid)
        held = await turn_api.queue_list(app, SessionParams(session=sid))
        assert held.held is not None and held.held.startswith("turn 1 failed")
        assert [m.text for m in held.items] == ["later"]

    run(tmp_path, monkeypatch, [WRITE, Reply(status=500, message="model down")], body)


def test_the_queue_survives_a_restart_held(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    sid: list[str] = []

    async def first(app: App, session: str, fake: FakeOpenAI) -> None:
        sid.append(session)
        await turn_api.send(app, SendParams(session=session, text="write a"))
        await waiting(app, session)
        await turn_api.queue(app, QueueParams(session=session, text="one"))
        await turn_api.queue(app, QueueParams(session=session, text="two"))

    run(tmp_path, monkeypatch, [WRITE], first, home=home)
    # The backend died here: cut what its orderly shutdown wrote after the queue,
    # so the journal keeps an open turn and the two queued messages.
    path = next(p for p in home.rglob("*.jsonl") if sid[0] in p.name)
    lines = path.read_bytes().splitlines(keepends=True)
    last_add = max(i for i, line in enumerate(lines) if b'"op":"add"' in line)
    path.write_bytes(b"".join(lines[:last_add + 1]))
    kinds = [e.type for e in Journal.open(path, writable=False).entries()]
    assert kinds[-2:] == ["queue", "queue"] and "turn_end" not in kinds

    async def second(app: App, _new: str, fake: FakeOpenAI) -> None:
        listed = await turn_api.queue_list(app, SessionParams(session=sid[0]))
        assert [m.text for m in listed.items] == ["one", "two"]
        assert listed.held is not None and "turn 1" in listed.held
        await turn_api.queue_send(app, SessionParams(session=sid[0]))
        await settle(app, sid[0])
        assert user_texts(sid[0], app) == ["write a", "one", "two"]

    run(tmp_path, monkeypatch, [Reply(text="one done"), Reply(text="two done")], second,
        home=home)


def test_queue_reply_names_the_limit() -> None:
    assert QueueReply(session="s").limit == queue.MAX_ITEMS
