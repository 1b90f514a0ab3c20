"""The turn engine end to end: real journal, real checkpoints, a real fake server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec

from tandem.adapters.sessions import new
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import NewParams
from tandem.store.journal import Journal
from tandem.turns.engine import CRASH_ERROR, DirectiveFrame, TurnSpec


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    return root


def _types(journal: Journal, turn: int) -> list[str]:
    return [e.type for e in journal.entries() if e.turn == turn]


async def _run(app: App, session: str, spec: TurnSpec) -> Any:
    service = app.turns
    turn = await service.engine.accept(spec)
    return await service.engine.wait(session, turn)


def test_chat_turn_writes_ordinary_roles_and_one_terminal_path(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = [Reply(text="Editing.", tool_calls=[ToolCallSpec(
        name="edit_file", input={"path": "a.txt", "old_text": "one", "new_text": "two"})]),
        Reply(text="Done.")]

    async def main() -> None:
        events = RecordingSink()
        app = App(home=tmp_path / "home", events=events)
        with FakeOpenAI(script) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            info = await new(app, NewParams(cwd=str(project)))
            try:
                ended = await _run(app, info.id, TurnSpec(
                    session=info.id, text="change it", provider="openai:m",
                    permission_mode="auto-edit"))
            finally:
                await app.turns.aclose()
        assert ended.outcome == "succeeded"
        assert ended.files_changed == ["a.txt"]
        assert ended.completeness == "captured"
        journal = app.sessions.journal(info.id)
        assert _types(journal, 1) == ["turn_start", "user", "assistant", "tool_call",
                                      "tool_result", "assistant", "turn_end"]
        start = next(e for e in journal.entries() if e.type == "turn_start")
        assert start.model_dump()["checkpoint"]  # a real pre-turn checkpoint
        kinds = [k for _, k, _ in events.events]
        assert kinds.count("turn-ended") == 1 and kinds[-1] == "turn-ended"
        assert kinds.index("turn-started") < kinds.index("delta")
        assert (project / "a.txt").read_text() == "two\n"

    asyncio.run(main())


def test_directive_turn_is_bounded_and_isolated(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tandem.providers.base import Message

    async def main() -> None:
        app = App(home=tmp_path / "home", events=RecordingSink())
        recorded: list[Any] = []
        with FakeOpenAI([Reply(text="root answer"), Reply(text="directive answer"),
                         Reply(text="root again")]) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            info = await new(app, NewParams(cwd=str(project)))
            try:
                await _run(app, info.id, TurnSpec(session=info.id, text="ROOT CHAT TEXT",
                                                  provider="openai:m"))
                ended = await _run(app, info.id, TurnSpec(
                    session=info.id, text="ISOLATED PROMPT", provider="openai:m",
                    messages=[Message(role="user", text="ISOLATED PROMPT")],
                    directive=DirectiveFrame("w1", "D1", "implement", 1),
                    on_terminal=lambda e: _record(recorded, e)))
                await _run(app, info.id, TurnSpec(session=info.id, text="second root",
                                                  provider="openai:m"))
            finally:
                await app.turns.aclose()
            bodies = [json.dumps(r.body) for r in fake.api_requests("/v1/chat/completions")]
        assert "ROOT CHAT TEXT" not in bodies[1] and "ISOLATED PROMPT" in bodies[1]
        assert "ISOLATED PROMPT" not in bodies[2] and "directive answer" not in bodies[2]
        assert "ROOT CHAT TEXT" in bodies[2]
        journal = app.sessions.journal(info.id)
        assert _types(journal, 2) == ["turn_start", "directive_open", "user", "assistant",
                                      "directive_close", "turn_end"]
        assert ended.outcome == "succeeded"
        assert recorded and recorded[0].outcome == "succeeded"
        assert recorded[0].answer == "directive answer"

    asyncio.run(main())


async def _record(store: list[Any], ended: Any) -> None:
    store.append(ended)


def test_busy_session_refuses_a_second_turn_and_cancel_aborts(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        app = App(home=tmp_path / "home", events=RecordingSink())
        with FakeOpenAI([Reply(text="slow", stall=True)]) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            info = await new(app, NewParams(cwd=str(project)))
            engine = app.turns.engine
            try:
                turn = await engine.accept(TurnSpec(session=info.id, text="go",
                                                    provider="openai:m"))
                with pytest.raises(TandemError) as busy:
                    await engine.accept(TurnSpec(session=info.id, text="again",
                                                 provider="openai:m"))
                assert busy.value.code == "busy"
                await asyncio.sleep(0.3)
                assert engine.cancel(info.id)
                ended = await engine.wait(info.id, turn)
            finally:
                await app.turns.aclose()
        assert ended.outcome == "aborted"
        assert _types(app.sessions.journal(info.id), 1)[-1] == "turn_end"

    asyncio.run(main())


def test_a_turn_left_open_by_a_crash_is_closed_as_aborted(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    journal = Journal.create(home, str(project))
    journal.append({"type": "turn_start", "turn": 1, "origin": "directive"})
    journal.append({"type": "directive_open", "turn": 1, "workspace": "w", "directive": "D3",
                    "action": "implement"})
    journal.append({"type": "user", "turn": 1, "text": "prompt"})
    journal.sync()
    sid = journal.id
    journal.close()  # the "crash": no close entries were written

    async def main() -> None:
        app = App(home=home, events=RecordingSink())
        service = app.turns
        repaired = service.engine.repair(app.sessions.journal(sid))
        assert repaired == [1]
        assert service.engine.repair(app.sessions.journal(sid)) == []  # once only
        entries = [e.model_dump() for e in app.sessions.journal(sid).entries()]
        assert [e["type"] for e in entries[-2:]] == ["directive_close", "turn_end"]
        assert entries[-1]["outcome"] == "aborted" and entries[-1]["error"] == CRASH_ERROR
        status = service.engine.status(sid, 1).model_dump()
        assert status["outcome"] == "aborted"
        app.sessions.manager.close()

    asyncio.run(main())


def test_bad_requests_are_refused_before_anything_is_written(
        project: Path, tmp_path: Path) -> None:
    async def main() -> None:
        app = App(home=tmp_path / "home", events=RecordingSink())
        info = await new(app, NewParams(cwd=str(project)))
        engine = app.turns.engine
        before = app.sessions.journal(info.id).path.read_bytes()
        for spec, code in [
            (TurnSpec(session=info.id, text="   ", provider="openai:m"), "invalid"),
            (TurnSpec(session=info.id, text="hi", provider="nonsense"), "invalid"),
            (TurnSpec(session=info.id, text="hi", provider="acp:unknown-agent"), "not-found"),
        ]:
            with pytest.raises(TandemError) as err:
                await engine.accept(spec)
            assert err.value.code == code
        assert app.sessions.journal(info.id).path.read_bytes() == before
        await app.turns.aclose()

    asyncio.run(main())


def test_a_held_session_accepts_no_turn(project: Path, tmp_path: Path) -> None:
    async def main() -> None:
        app = App(home=tmp_path / "home", events=RecordingSink())
        info = await new(app, NewParams(cwd=str(project)))
        engine = app.turns.engine
        app.gate.acquire(info.id, "rewind")  # a rewind holds the session
        before = app.sessions.journal(info.id).path.read_bytes()
        with pytest.raises(TandemError) as err:
            await engine.accept(TurnSpec(session=info.id, text="hi", provider="openai:m"))
        assert err.value.code == "busy" and "rewound" in err.value.message
        assert app.sessions.journal(info.id).path.read_bytes() == before
        await app.turns.aclose()

    asyncio.run(main())


def test_two_concurrent_sends_reserve_one_turn(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        app = App(home=tmp_path / "home", events=RecordingSink())
        with FakeOpenAI([Reply(text="one"), Reply(text="two")]) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            info = await new(app, NewParams(cwd=str(project)))
            engine = app.turns.engine
            try:
                results = await asyncio.gather(
                    engine.accept(TurnSpec(session=info.id, text="a", provider="openai:m")),
                    engine.accept(TurnSpec(session=info.id, text="b", provider="openai:m")),
                    return_exceptions=True)
                turns_ok = [r for r in results if isinstance(r, int)]
                errors = [r for r in results if isinstance(r, TandemError)]
                assert turns_ok == [1] and len(errors) == 1 and errors[0].code == "busy"
                await engine.wait(info.id, 1)
            finally:
                await app.turns.aclose()
        starts = [e for e in app.sessions.journal(info.id).entries() if e.type == "turn_start"]
        assert [e.turn for e in starts] == [1]

    asyncio.run(main())


def test_closing_a_session_stops_its_providers_and_waits_for_turns(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tandem.adapters.sessions import close
    from tandem.protocol.sessions import CloseParams

    async def main() -> None:
        app = App(home=tmp_path / "home", events=RecordingSink())
        with FakeOpenAI([Reply(text="slow", stall=True)]) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            info = await new(app, NewParams(cwd=str(project)))
            service = app.turns
            turn = await service.engine.accept(TurnSpec(session=info.id, text="go",
                                                        provider="openai:m"))
            with pytest.raises(TandemError) as err:
                await close(app, CloseParams(session=info.id))
            assert err.value.code == "busy"
            service.engine.cancel(info.id)
            await service.engine.wait(info.id, turn)
            provider = service.provider(TurnSpec(session=info.id, text="x",
                                                 provider="openai:m"),
                                        app.sessions.journal(info.id))
            await close(app, CloseParams(session=info.id))
            assert service.provider(TurnSpec(session=info.id, text="x", provider="openai:m"),
                                    app.sessions.journal(info.id)) is not provider  # rebuilt
            await service.aclose()

    asyncio.run(main())


def test_ended_turns_are_bounded_and_an_evicted_one_is_read_from_the_journal(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``ended`` cache keeps the newest turns; an older turn's end comes from its journal."""
    from tandem.lru import LRU
    from tandem.turns.engine import ENDED_LIMIT

    async def main() -> None:
        app = App(home=tmp_path / "home", events=RecordingSink())
        engine = app.turns.engine
        assert isinstance(engine.ended, LRU) and engine.ended.limit == ENDED_LIMIT
        engine.ended = LRU(2)
        with FakeOpenAI([Reply(text="one"), Reply(text="two"), Reply(text="three")]) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
            info = await new(app, NewParams(cwd=str(project)))
            try:
                for text in ("first", "second", "third"):
                    ended = await _run(app, info.id, TurnSpec(session=info.id, text=text,
                                                              provider="openai:m"))
                    assert ended.outcome == "succeeded"
                assert list(engine.ended) == [(info.id, 2), (info.id, 3)]
                assert engine.ended.get((info.id, 3)) is ended  # the newest is the one kept
                evicted = await engine.wait(info.id, 1)
                status = engine.status(info.id, 1).model_dump()
                with pytest.raises(TandemError) as missing:
                    await engine.wait(info.id, 9)
            finally:
                await app.turns.aclose()
        assert (evicted.session, evicted.turn, evicted.outcome) == (info.id, 1, "succeeded")
        assert status == {"state": "ended", "turn": 1, "waiting": False, "outcome": "succeeded",
                          "error": None, "files_changed": []}
        assert missing.value.code == "not-found"
        assert (info.id, 1) not in engine.ended  # reading it back does not grow the cache

    asyncio.run(main())
