"""Forking a session (``sessions/fork``) and editing-and-resending a turn (``turns/resend``).

Real turn engine, real checkpoints, the fake OpenAI server over HTTP; the
requests it recorded show what each new turn carried.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply
from pydantic import ValidationError

from tandem.adapters.sessions import fork
from tandem.adapters.turns import resend
from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import ForkParams
from tandem.protocol.turns import ResendParams
from tandem.sessions.fork import fork_entries

from .helpers import PROVIDER, chat, entries, journal_path, new_session, tree, use, writes

pytestmark = pytest.mark.anyio

UNKNOWN = "0190f0f0-0000-7000-8000-000000000000"


def _chats(fake: FakeOpenAI) -> list[str]:
    """The chat request bodies the fake received, as JSON text."""
    return [json.dumps(r.body) for r in fake.requests if r.path.endswith("chat/completions")]


async def _error(coro: object) -> TandemError:
    with pytest.raises(TandemError) as err:
        await coro  # type: ignore[misc]
    return err.value


def _three_turns() -> list[Reply]:
    return [*writes(("a.txt", "one\n"), text="ONE-WRITING"), Reply(text="TWO-DONE"),
            Reply(text="THREE-DONE"), Reply(text="NEXT-DONE")]


async def test_fork_validation_errors(app: App, project: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError):
        ForkParams(session="s", turn=0)
    with pytest.raises(ValidationError):
        ForkParams(session="", turn=1)
    with pytest.raises(ValidationError):
        ForkParams.model_validate({"session": "s", "turn": 1, "extra": 1})
    with FakeOpenAI(_three_turns()) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            err = await _error(fork(app, ForkParams(session=sid, turn=1)))
            assert err.code == "not-found"
            assert "has no turn 1 to fork from (it has no turn yet)" in err.message
            await chat(app, sid, "first")
            await chat(app, sid, "second")
            err = await _error(fork(app, ForkParams(session=sid, turn=3)))
            assert err.code == "not-found"
            assert err.message == (f"Session {sid} has no turn 3 to fork from "
                                   "(its turns are 1–2)")
            err = await _error(fork(app, ForkParams(session=UNKNOWN, turn=1)))
            assert err.code == "not-found"
            # A rewound turn is not there to fork from.
            plan = await app.rewinds.plan(sid, 2)
            await app.rewinds.rewind(sid, 2, plan.digest)
            err = await _error(fork(app, ForkParams(session=sid, turn=2)))
            assert err.code == "not-found"
            assert "(its turns are 1)" in err.message
        finally:
            await app.turns.aclose()


def test_fork_refuses_a_directive_turn_and_a_running_one() -> None:
    base = {"seq": 1, "ts": "t"}
    running = [{**base, "type": "turn_start", "turn": 1, "origin": "chat"},
               {**base, "type": "user", "turn": 1, "text": "hi"}]
    with pytest.raises(TandemError) as err:
        fork_entries(running, 1, "S")
    assert err.value.code == "busy"
    directive = [{**base, "type": "turn_start", "turn": 1, "origin": "directive"},
                 {**base, "type": "directive_open", "turn": 1, "workspace": "w",
                  "directive": "D1", "action": "implement"},
                 {**base, "type": "turn_end", "turn": 1, "outcome": "succeeded"}]
    with pytest.raises(TandemError) as err:
        fork_entries(directive, 1, "S")
    assert err.value.code == "invalid"


async def test_fork_carries_the_conversation_up_to_its_turn(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(_three_turns()) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            await chat(app, sid, "FIRST request")
            await chat(app, sid, "SECOND request")
            await chat(app, sid, "THIRD request")
            files = tree(project)
            source = journal_path(app, sid).read_bytes()
            reply = await fork(app, ForkParams(session=sid, turn=2))
            assert reply.id != sid
            assert reply.forked_from.session == sid and reply.forked_from.turn == 2
            assert tree(project) == files  # files untouched
            assert journal_path(app, sid).read_bytes() == source  # source untouched
            header = json.loads(Path(reply.path).read_text().splitlines()[0])
            assert header["forked_from"] == {"session": sid, "turn": 2}
            copied = entries(app, reply.id)
            assert {e["turn"] for e in copied} == {1, 2}
            assert all(e.get("checkpoint") is None and e.get("patch") is None for e in copied)
            # The fork's next turn carries turns 1-2 and nothing of turn 3.
            await chat(app, reply.id, "FORKED request")
            last = _chats(fake)[-1]
            for kept in ("FIRST request", "ONE-WRITING", "SECOND request", "TWO-DONE",
                         "FORKED request"):
                assert kept in last
            assert "THIRD" not in last
            assert [e["turn"] for e in entries(app, reply.id)
                    if e["type"] == "turn_start"] == [1, 2, 3]
            # A copied turn has no checkpoint of the fork's: it cannot be rewound there.
            err = await _error(app.rewinds.plan(reply.id, 1))
            assert err.code == "no-checkpoint"
        finally:
            await app.turns.aclose()


async def test_resend_rewinds_then_sends_and_undo_brings_the_turns_back(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(_three_turns()) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            await chat(app, sid, "FIRST request")
            await chat(app, sid, "SECOND request")
            assert (project / "a.txt").read_text() == "one\n"
            plan = await app.rewinds.plan(sid, 1)
            before = tree(project), journal_path(app, sid).read_bytes()
            # Refusals change nothing: a stale digest, an empty text, an unknown provider.
            stale = ResendParams(session=sid, turn=1, digest="0" * 64, text="EDITED",
                                 provider=PROVIDER)
            assert (await _error(resend(app, stale))).code == "stale"
            empty = ResendParams(session=sid, turn=1, digest=plan.digest, text="  \n",
                                 provider=PROVIDER)
            assert (await _error(resend(app, empty))).code == "invalid"
            bad = ResendParams(session=sid, turn=1, digest=plan.digest, text="EDITED",
                               provider="nosuch:model")
            assert (await _error(resend(app, bad))).code in {"invalid", "not-found",
                                                             "unavailable"}
            assert (tree(project), journal_path(app, sid).read_bytes()) == before
            with pytest.raises(ValidationError):
                ResendParams(session=sid, turn=0, digest=plan.digest, text="x")
            done = await resend(app, ResendParams(session=sid, turn=1, digest=plan.digest,
                                                  text="EDITED first", provider=PROVIDER,
                                                  permission_mode="auto-edit"))
            assert done.turn == 3 and done.rewound == [1, 2] and done.before_turn == 1
            assert not (project / "a.txt").exists() or (project / "a.txt").read_text() != "one\n"
            await app.turns.engine.wait(sid, 3)
            last = _chats(fake)[-1]
            assert "EDITED first" in last
            for gone in ("FIRST request", "SECOND request", "ONE-WRITING", "TWO-DONE"):
                assert gone not in last
            # Undone like any rewind: turns 1-2 and their files come back, and the
            # resent turn goes (it is the undo's `hides_from`).
            undo = await app.rewinds.undo.plan(sid, False)
            assert undo.rewind_seq == done.rewind_seq and undo.refusal is None
            assert [t.turn for t in undo.turns] == [1, 2]
            assert [t.turn for t in undo.takes_back] == [3]
            assert undo.changed_externally == []  # the resent turn's end is what tandem left
            result = await app.rewinds.undo.undo(sid, undo.digest)
            assert result.turns == [1, 2]
            assert (project / "a.txt").read_text() == "one\n"
            undo_entry = entries(app, sid)[-1]
            assert undo_entry["type"] == "rewind_undo" and undo_entry["hides_from"] == 3
            index = app.sessions.index(app.sessions.journal(sid))
            assert index.hidden == {3}
            await chat(app, sid, "AFTER the undo")
            last = _chats(fake)[-1]
            for back in ("FIRST request", "SECOND request", "TWO-DONE", "AFTER the undo"):
                assert back in last
            assert "EDITED" not in last
        finally:
            await app.turns.aclose()


async def test_undo_of_a_resend_is_refused_after_a_further_turn(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(_three_turns()) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            await chat(app, sid, "FIRST request")
            await chat(app, sid, "SECOND request")
            plan = await app.rewinds.plan(sid, 2)
            done = await resend(app, ResendParams(session=sid, turn=2, digest=plan.digest,
                                                  text="EDITED second", provider=PROVIDER))
            await app.turns.engine.wait(sid, done.turn)
            assert entries(app, sid)[[e["type"] for e in entries(app, sid)].index("rewind")][
                "resend"] is True
            await chat(app, sid, "FOURTH request")
            undo = await app.rewinds.undo.plan(sid, False)
            assert undo.later_turns == [3, 4] and undo.takes_back == []
            assert undo.refusal is not None and "turn(s) 3, 4 ran after" in undo.refusal
            err = await _error(app.rewinds.undo.undo(sid, undo.digest))
            assert err.code == "later-turns"
        finally:
            await app.turns.aclose()
