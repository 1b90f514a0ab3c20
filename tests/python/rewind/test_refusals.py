"""Every refusal of a rewind, caused for real; and the gaps a plan names."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply
from pydantic import ValidationError

from tandem.app import App
from tandem.checkpoints.hooks import Checkpoints
from tandem.protocol.base import TandemError
from tandem.rewind.plan import turn_facts
from tandem.server.table import build_table
from tandem.sessions.compaction import compaction_entry
from tandem.turns.engine import TurnSpec

from .helpers import PROVIDER, chat, journal_path, new_session, tree, use, writes

pytestmark = pytest.mark.anyio


async def _code(coro: object) -> str:
    with pytest.raises(TandemError) as err:
        await coro  # type: ignore[misc]
    return err.value.code


async def test_no_such_turn_bad_numbers_and_bad_digest(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(writes(("a.txt", "x\n"))) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            assert await _code(app.rewinds.plan(sid, 1)) == "not-found"  # no turn yet
            await chat(app, sid, "one")
            assert await _code(app.rewinds.plan(sid, 2)) == "not-found"
            assert await _code(app.rewinds.plan(sid, 0)) == "invalid"
            assert await _code(app.rewinds.rewind(sid, 1, "not-a-digest")) == "invalid"
            unknown = "0190f0f0-0000-7000-8000-000000000000"
            assert await _code(app.rewinds.plan(unknown, 1)) == "not-found"
            # A digest of another plan: stale, nothing changes.
            before = tree(project), journal_path(app, sid).read_bytes()
            assert await _code(app.rewinds.rewind(sid, 1, "0" * 64)) == "stale"
            assert (tree(project), journal_path(app, sid).read_bytes()) == before
        finally:
            await app.turns.aclose()


async def test_busy_while_a_turn_runs(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = [*writes(("a.txt", "x\n")), Reply(text="slow", stall=True)]
    with FakeOpenAI(script) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            await chat(app, sid, "one")
            plan = await app.rewinds.plan(sid, 1)
            engine = app.turns.engine
            turn = await engine.accept(TurnSpec(session=sid, text="two", provider=PROVIDER))
            assert await _code(app.rewinds.plan(sid, 1)) == "busy"
            assert await _code(app.rewinds.rewind(sid, 1, plan.digest)) == "busy"
            assert (project / "a.txt").read_text() == "x\n"
            engine.cancel(sid)
            assert (await engine.wait(sid, turn)).outcome == "aborted"
            # Once it ended the journal moved on: the old plan is stale.
            assert await _code(app.rewinds.rewind(sid, 1, plan.digest)) == "stale"
        finally:
            await app.turns.aclose()


async def test_two_rewinds_at_once_one_is_busy(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(writes(("a.txt", "x\n"))) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            await chat(app, sid, "one")
            plan = await app.rewinds.plan(sid, 1)
            results = await asyncio.gather(app.rewinds.rewind(sid, 1, plan.digest),
                                           app.rewinds.rewind(sid, 1, plan.digest),
                                           return_exceptions=True)
            codes = sorted(r.code if isinstance(r, TandemError) else "ok" for r in results)
            assert codes == ["busy", "ok"]
        finally:
            await app.turns.aclose()


async def test_no_checkpoint_recorded(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A backend whose turn engine records no checkpoints.
    app.turns.engine.checkpoints = Checkpoints()  # turns record no checkpoint
    with FakeOpenAI([Reply(text="hi")]) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            await chat(app, sid, "one")
            with pytest.raises(TandemError) as err:
                await app.rewinds.plan(sid, 1)
            assert err.value.code == "no-checkpoint" and "no checkpoint" in err.value.message
        finally:
            await app.turns.aclose()


async def test_checkpoint_from_another_root(
        app: App, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(writes(("a.txt", "x\n"))) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            await chat(app, sid, "one")
            other = tmp_path / "elsewhere"
            other.mkdir()
            # The session now works in another directory (as after a re-root).
            monkeypatch.setattr(app.sessions, "root_of", lambda journal: other)
            assert await _code(app.rewinds.plan(sid, 1)) == "no-checkpoint"
            other.rmdir()
            assert await _code(app.rewinds.plan(sid, 1)) == "not-found"
        finally:
            await app.turns.aclose()


async def test_compaction_blocks_rewind_before_its_kept_turns(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI([Reply(text="a"), Reply(text="b"), Reply(text="c")]) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            for text in ("one", "two", "three"):
                await chat(app, sid, text)
            app.sessions.journal(sid).append(compaction_entry("summary", 3, 100, 10))
            with pytest.raises(TandemError) as err:
                await app.rewinds.plan(sid, 2)
            assert err.value.code == "compaction" and "compacted" in err.value.message
            assert (await app.rewinds.plan(sid, 3)).turns[0].turn == 3
        finally:
            await app.turns.aclose()


async def test_read_only_session(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(writes(("a.txt", "x\n"))) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            await chat(app, sid, "one")
            other = App(home=app.home)  # a second backend: the journal's lock is held
            try:
                assert await _code(other.rewinds.plan(sid, 1)) == "read-only"
            finally:
                await other.turns.aclose()
        finally:
            await app.turns.aclose()


async def test_gaps_large_file_and_unended_turn(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(writes(("a.txt", "x\n"))) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            with open(project / "big.bin", "wb") as f:  # over the 10 MiB capture cap
                f.truncate(11 * 1024 * 1024)
            await chat(app, sid, "one")
            # A turn the backend died in: started, never ended, no patch.
            journal = app.sessions.journal(sid)
            journal.append({"type": "turn_start", "turn": 2, "origin": "chat",
                            "provider": PROVIDER, "checkpoint": None})
            plan = await app.rewinds.plan(sid, 1)
            kinds = {(g.kind, g.path) for g in plan.gaps}
            assert ("gap-at-checkpoint", "big.bin") in kinds
            assert ("no-patch", None) in kinds and ("no-end-state", None) in kinds
            assert (project / "big.bin").stat().st_size == 11 * 1024 * 1024
        finally:
            await app.turns.aclose()


def test_acp_chat_turns_mark_a_reset_directive_turns_do_not() -> None:
    def start(turn: int, provider: str, origin: str = "chat") -> dict[str, object]:
        return {"type": "turn_start", "turn": turn, "origin": origin, "provider": provider,
                "checkpoint": "c" * 40}

    chat_acp = [start(1, "acp:claude"), start(2, "acp:claude")]
    assert turn_facts(chat_acp, 2).acp_reset
    directive_acp = [start(1, "acp:claude"), start(2, "acp:claude", "directive"),
                     {"type": "directive_open", "turn": 2, "workspace": "w", "directive": "D1",
                      "action": "implement", "attempt": 1}]
    facts = turn_facts(directive_acp, 2)
    assert not facts.acp_reset and facts.attempts[0].directive == "D1"
    assert not turn_facts([start(1, "openai:gpt")], 1).acp_reset


def test_methods_are_registered_and_validate() -> None:
    table = build_table()
    for name in ("sessions/rewind-plan", "sessions/rewind", "sessions/turn-patch"):
        assert name in table
    spec = table["sessions/rewind"]
    with pytest.raises(ValidationError):
        spec.params.model_validate({"session": "s", "turn": 1, "digest": "xyz"})
    with pytest.raises(ValidationError):
        spec.params.model_validate({"session": "s", "turn": 0, "digest": "a" * 64})
    with pytest.raises(ValidationError):
        table["sessions/rewind-plan"].params.model_validate({"session": "", "turn": 1})
