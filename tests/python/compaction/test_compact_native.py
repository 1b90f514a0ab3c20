"""Compaction through a native provider against the fake OpenAI server (real HTTP)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Match, Reply, Script, Step

from tandem.adapters.sessions import compact, compact_cancel, compaction_status
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import CompactParams, SessionOnlyParams, StatusParams
from tandem.sessions.compaction import SUMMARY_SYSTEM
from tandem.sessions.projection import SUMMARY_PREFIX

from .conftest import file_hash, tree_hash, write_settings
from .sessions import chat, directive, entries, journal_path, new_session

CHAT = "/v1/chat/completions"


def _use(fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


async def _build(app: App, project: Path) -> str:
    """Turns: 1 chat ALPHA, 2 directive SECRET, 3 chat BRAVO, 4 chat CHARLIE."""
    sid = await new_session(app, project)
    assert (await chat(app, sid, "ALPHA request")).outcome == "succeeded"
    assert (await directive(app, sid, "DIRECTIVE SECRET prompt")).outcome == "succeeded"
    assert (await chat(app, sid, "BRAVO request")).outcome == "succeeded"
    assert (await chat(app, sid, "CHARLIE request")).outcome == "succeeded"
    return sid


BUILD = [Reply(text="alpha answer " * 30), Reply(text="directive secret answer"),
         Reply(text="bravo answer"), Reply(text="charlie answer")]


def test_summary_excludes_directives_and_next_request_is_summary_plus_kept(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_settings({"compaction_keep_turns": 1})
    script = [*BUILD, Reply(text="SUMMARY-7f3: the user asked about alpha and bravo."),
              Reply(text="delta answer")]

    async def main() -> None:
        with FakeOpenAI(script) as fake:
            _use(fake, monkeypatch)
            try:
                sid = await _build(app, project)
                reply = await compact(app, CompactParams(session=sid))
                assert (await chat(app, sid, "DELTA request")).outcome == "succeeded"
            finally:
                await app.turns.aclose()
            bodies = [r.body for r in fake.api_requests(CHAT)]
        assert len(bodies) == 6
        summary_req = json.dumps(bodies[4])
        assert SUMMARY_SYSTEM[:60] in summary_req
        assert "ALPHA request" in summary_req and "bravo answer" in summary_req
        assert "SECRET" not in summary_req and "directive secret" not in summary_req
        assert "CHARLIE" not in summary_req  # kept verbatim, not summarised
        nxt = bodies[5]
        users = [m["content"] for m in nxt["messages"] if m["role"] == "user"]
        assistants = [m.get("content") for m in nxt["messages"] if m["role"] == "assistant"]
        assert users == [SUMMARY_PREFIX + "SUMMARY-7f3: the user asked about alpha and bravo.",
                         "CHARLIE request", "DELTA request"]
        assert assistants == ["Understood.", "charlie answer"]
        assert reply.first_kept_turn == 4 and reply.tokens_after < reply.tokens_before
        found = [e for e in entries(app, sid) if e["type"] == "compaction"]
        assert len(found) == 1 and found[0]["seq"] == reply.seq
        assert found[0]["first_kept_turn"] == 4
        assert found[0]["tokens_before"] == reply.tokens_before
        # the summary request wrote nothing but the compaction entry
        assert not any(e["type"] in ("user", "assistant") and "SUMMARY-7f3" in e.get("text", "")
                       for e in entries(app, sid))
        assert isinstance(app.events, RecordingSink)
        kinds = [(k, p.get("entry", {}).get("type")) for _, k, p in app.events.events]
        assert ("entry", "compaction") in kinds

    asyncio.run(main())


def test_a_second_compaction_summarises_the_first_summary(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_settings({"compaction_keep_turns": 1})
    script = [*BUILD, Reply(text="FIRST-SUMMARY"), Reply(text="delta answer"),
              Reply(text="SECOND-SUMMARY"), Reply(text="echo answer")]

    async def main() -> None:
        with FakeOpenAI(script) as fake:
            _use(fake, monkeypatch)
            try:
                sid = await _build(app, project)
                await compact(app, CompactParams(session=sid))
                await chat(app, sid, "DELTA request")
                second = await compact(app, CompactParams(session=sid))
                await chat(app, sid, "ECHO request")
            finally:
                await app.turns.aclose()
            bodies = [json.dumps(r.body) for r in fake.api_requests(CHAT)]
        assert second.first_kept_turn == 5
        assert "FIRST-SUMMARY" in bodies[6] and "CHARLIE request" in bodies[6]
        assert "ALPHA" not in bodies[6] and "DELTA" not in bodies[6]
        assert "SECOND-SUMMARY" in bodies[7] and "DELTA request" in bodies[7]
        assert "FIRST-SUMMARY" not in bodies[7] and "CHARLIE" not in bodies[7]

    asyncio.run(main())


def test_failed_compaction_leaves_the_journal_byte_identical(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_settings({"compaction_keep_turns": 1})
    script = [*BUILD, Reply(status=400, message="context too long for summary"),
              Reply(text="")]

    async def main() -> None:
        with FakeOpenAI(script) as fake:
            _use(fake, monkeypatch)
            try:
                sid = await _build(app, project)
                path = journal_path(app, sid)
                # The store upkeep after the built turns may still touch the home.
                await app.turns.engine.checkpoints.background_done()
                before, everything = file_hash(path), tree_hash(app.home)
                with pytest.raises(TandemError) as err:
                    await compact(app, CompactParams(session=sid))
                assert err.value.code == "provider"
                assert "context too long for summary" in err.value.message
                assert file_hash(path) == before
                assert tree_hash(app.home) == everything  # nothing else on disk either
                with pytest.raises(TandemError) as err:  # an empty summary is a failure too
                    await compact(app, CompactParams(session=sid))
                assert "empty summary" in err.value.message
                assert file_hash(path) == before
            finally:
                await app.turns.aclose()

    asyncio.run(main())


def test_cancelled_compaction_leaves_the_journal_byte_identical(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_settings({"compaction_keep_turns": 1})
    script = [*BUILD, Reply(text="never finished", stall=True)]

    async def main() -> None:
        with FakeOpenAI(script) as fake:
            _use(fake, monkeypatch)
            try:
                sid = await _build(app, project)
                path = journal_path(app, sid)
                # The store upkeep after the built turns may still touch the home.
                await app.turns.engine.checkpoints.background_done()
                before, everything = file_hash(path), tree_hash(app.home)
                task = asyncio.create_task(compact(app, CompactParams(session=sid)))
                while len(fake.api_requests(CHAT)) < 5:
                    await asyncio.sleep(0.02)
                status = await compaction_status(app, StatusParams(session=sid))
                assert status.compacting
                with pytest.raises(TandemError) as busy:  # no turn while compacting
                    await app.compactions.maybe_compact(sid)
                assert busy.value.code == "busy"
                assert (await compact_cancel(app, SessionOnlyParams(session=sid))).cancelled
                with pytest.raises(TandemError) as err:
                    await task
                assert err.value.code == "cancelled"
                assert file_hash(path) == before and tree_hash(app.home) == everything
                assert not (await compaction_status(app, StatusParams(session=sid))).compacting
                assert not (await compact_cancel(app, SessionOnlyParams(session=sid))).cancelled
            finally:
                await app.turns.aclose()

    asyncio.run(main())


def test_refused_while_a_turn_runs_and_when_nothing_to_compact(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_settings({"compaction_keep_turns": 2})
    script = Script([Reply(text="alpha answer"),
                     Step(match=Match(last_user_contains="SLOW"),
                          reply=Reply(text="slow answer", stall=True))])

    async def main() -> None:
        with FakeOpenAI(script) as fake:
            _use(fake, monkeypatch)
            try:
                sid = await new_session(app, project)
                await chat(app, sid, "ALPHA request")
                path = journal_path(app, sid)
                before = file_hash(path)
                with pytest.raises(TandemError) as err:
                    await compact(app, CompactParams(session=sid))
                assert err.value.code == "nothing-to-compact"
                assert file_hash(path) == before
                from tandem.turns.engine import TurnSpec

                engine = app.turns.engine
                turn = await engine.accept(TurnSpec(session=sid, text="SLOW request",
                                                    provider="openai:gpt-test"))
                with pytest.raises(TandemError) as err:
                    await compact(app, CompactParams(session=sid))
                assert err.value.code == "busy" and "running" in err.value.message
                assert await app.compactions.maybe_compact(sid) is False
                while len(fake.api_requests(CHAT)) < 2:
                    await asyncio.sleep(0.02)
                engine.cancel(sid)
                await engine.wait(sid, turn)
                with pytest.raises(TandemError) as err:
                    await compact(app, CompactParams(session=sid, provider="nope"))
                assert err.value.code == "invalid"
            finally:
                await app.turns.aclose()

    asyncio.run(main())


def test_maybe_compact_compacts_past_the_threshold_only(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = [Reply(text="alpha answer " * 40), Reply(text="bravo answer"),
              Reply(text="AUTO-SUMMARY")]

    async def main() -> None:
        with FakeOpenAI(script) as fake:
            _use(fake, monkeypatch)
            try:
                sid = await new_session(app, project)
                await chat(app, sid, "ALPHA request")
                await chat(app, sid, "BRAVO request")
                write_settings({"context_windows": {"gpt-test": 100_000},
                                "compaction_keep_turns": 1})
                assert await app.compactions.maybe_compact(sid, text="next") is False
                status = await compaction_status(app, StatusParams(session=sid))
                assert status.window == 100_000 and not status.would_compact
                write_settings({"context_windows": {"gpt-test": 1024},
                                "compaction_threshold": 0.1, "auto_compact": False,
                                "compaction_keep_turns": 1})
                assert (await compaction_status(app, StatusParams(session=sid))).tokens > 102
                assert await app.compactions.maybe_compact(sid, text="next") is False  # auto off
                write_settings({"context_windows": {"gpt-test": 1024},
                                "compaction_threshold": 0.1, "compaction_keep_turns": 1})
                assert (await compaction_status(app, StatusParams(session=sid))).would_compact
                assert await app.compactions.maybe_compact(sid, text="next") is True
                status = await compaction_status(app, StatusParams(session=sid))
                assert status.latest is not None and status.latest["first_kept_turn"] == 2
            finally:
                await app.turns.aclose()
        compactions = [e for e in entries(app, sid) if e["type"] == "compaction"]
        assert [c["summary"] for c in compactions] == ["AUTO-SUMMARY"]

    asyncio.run(main())


def test_bad_settings_are_reported(app: App, project: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        with FakeOpenAI([Reply(text="a")]) as fake:
            _use(fake, monkeypatch)
            try:
                sid = await new_session(app, project)
                await chat(app, sid, "ALPHA request")
                write_settings({"compaction_threshold": 3})
                with pytest.raises(TandemError) as err:
                    await compact(app, CompactParams(session=sid))
                assert "compaction_threshold" in err.value.message
                with pytest.raises(TandemError):
                    await app.compactions.maybe_compact(sid)
            finally:
                await app.turns.aclose()

    asyncio.run(main())
