"""Undo a Rewind through the real turn engine, real checkpoints and a real HTTP model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.sessions.projection import project as projection
from tandem.sessions.projection import visible_turns

from .helpers import chat, entries, new_session, tree, use
from .test_rewind import SCRIPT, _three_turns

pytestmark = pytest.mark.anyio


async def test_undo_brings_back_files_turns_and_projection(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI([*SCRIPT, Reply(text="after the undo")]) as fake:
        use(fake, monkeypatch)
        try:
            sid, _ = await _three_turns(app, project)
            before_files, before_entries = tree(project), entries(app, sid)
            before_context = projection(before_entries)
            plan = await app.rewinds.plan(sid, 2)
            await app.rewinds.rewind(sid, 2, plan.digest)
            assert tree(project) != before_files
            (project / "keep.txt").write_text("edited by hand after the rewind\n")

            undo = await app.rewinds.undo.plan(sid)
            assert undo.refusal is None and undo.later_turns == []
            assert [t.turn for t in undo.turns] == [2, 3]
            assert [(a.directive, a.attempt) for a in undo.attempts] == [("D1", 1)]
            assert sorted(undo.to_restore) == ["a.txt", "c/deep.txt", "d.txt", "keep.txt"]
            assert [c.path for c in undo.changed_externally] == ["keep.txt"]
            done = await app.rewinds.undo.undo(sid, undo.digest)
            assert done.turns == [2, 3] and not done.files_only
            # Byte for byte (and mode) as before the rewind, the outside edit included
            # in what the undo overwrote (the plan said so).
            assert tree(project) == before_files
            written = entries(app, sid)
            assert written[: len(before_entries)] == before_entries  # nothing rewritten
            [cancel] = [e for e in written if e["type"] == "rewind_undo"]
            assert cancel["rewind_seq"] == plan.journal_seq + 1
            assert visible_turns(written)[1] == set()
            assert projection(written) == before_context
            # The next chat request carries the returned turns.
            assert (await chat(app, sid, "FOURTH request")).outcome == "succeeded"
            last = json.dumps(fake.api_requests("/v1/chat/completions")[-1].body)
            assert "FIRST request" in last and "SECOND request" in last
            # Nothing left to undo.
            with pytest.raises(TandemError) as e:
                await app.rewinds.undo.plan(sid)
            assert e.value.code == "not-found"
        finally:
            await app.turns.aclose()


async def test_undo_refused_after_a_later_turn_files_only_allowed(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI([*SCRIPT, Reply(text="a later turn")]) as fake:
        use(fake, monkeypatch)
        try:
            sid, after_first = await _three_turns(app, project)
            before_files = tree(project)
            plan = await app.rewinds.plan(sid, 2)
            await app.rewinds.rewind(sid, 2, plan.digest)
            assert (await chat(app, sid, "LATER request")).outcome == "succeeded"
            undo = await app.rewinds.undo.plan(sid)
            assert undo.later_turns == [4]
            assert undo.refusal is not None and "turn(s) 4 ran after the rewind" in undo.refusal
            with pytest.raises(TandemError) as e:
                await app.rewinds.undo.undo(sid, undo.digest)
            assert e.value.code == "later-turns"
            assert tree(project) == after_first
            files = await app.rewinds.undo.plan(sid, files_only=True)
            assert files.refusal is None and files.files_only
            assert files.turns == [] and files.attempts == []
            done = await app.rewinds.undo.undo(sid, files.digest, files_only=True)
            assert done.files_only and done.turns == []
            assert tree(project) == before_files
            written = entries(app, sid)
            assert visible_turns(written)[1] == {2, 3}  # the turns stay rewound
            assert written[-1]["type"] == "rewind_undo" and written[-1]["files_only"]
        finally:
            await app.turns.aclose()


async def test_stale_undo_plan_refused_and_nothing_changes(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            assert (await chat(app, sid, "FIRST request")).outcome == "succeeded"
            plan = await app.rewinds.plan(sid, 1)
            await app.rewinds.rewind(sid, 1, plan.digest)
            undo = await app.rewinds.undo.plan(sid)
            (project / "a.txt").write_text("typed meanwhile\n")
            n = len(entries(app, sid))
            with pytest.raises(TandemError) as e:
                await app.rewinds.undo.undo(sid, undo.digest)
            assert e.value.code == "stale"
            assert (project / "a.txt").read_text() == "typed meanwhile\n"
            assert len(entries(app, sid)) == n
        finally:
            await app.turns.aclose()
