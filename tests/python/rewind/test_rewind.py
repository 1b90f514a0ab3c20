"""Rewind through the real turn engine, real checkpoints and a real HTTP model."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.adapters.sessions import turn_patch, turns
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import TurnPatchParams, TurnsParams
from tandem.sessions.projection import project as projection

from .helpers import chat, directive, entries, journal_path, new_session, tree, use, writes

pytestmark = pytest.mark.anyio

# Turn 1 (chat) edits a.txt and creates b.txt; turn 2 (chat) edits a.txt and
# creates c/deep.txt; turn 3 (directive D1, attempt 1) creates d.txt.
SCRIPT = [
    *writes(("a.txt", "alpha one\n"), ("b.txt", "bee\n")),
    *writes(("a.txt", "alpha two\n"), ("c/deep.txt", "deep\n")),
    *writes(("d.txt", "from the directive\n")),
]


async def _three_turns(app: App, project: Path) -> tuple[str, dict[str, tuple[str, int]]]:
    sid = await new_session(app, project)
    assert (await chat(app, sid, "FIRST request")).outcome == "succeeded"
    after_first = tree(project)
    assert (await chat(app, sid, "SECOND request")).outcome == "succeeded"
    assert (await directive(app, sid, "DIRECTIVE prompt")).outcome == "succeeded"
    assert (project / "d.txt").exists() and (project / "c/deep.txt").exists()
    return sid, after_first


async def test_plan_then_rewind_restores_files_and_hides_turns(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git_before = subprocess.run(["git", "status", "--porcelain=v2", "-uall"], cwd=project,
                                capture_output=True, check=True).stdout
    dot_git = tree(project / ".git")
    with FakeOpenAI([*SCRIPT, Reply(text="fourth answer")]) as fake:
        use(fake, monkeypatch)
        try:
            sid, after_first = await _three_turns(app, project)
            plan = await app.rewinds.plan(sid, 2)
            assert plan.before_turn == 2 and len(plan.digest) == 64
            assert plan.to_restore == ["a.txt"]
            assert plan.to_delete == ["c/deep.txt", "d.txt"]
            assert plan.changed_externally == []
            assert [t.turn for t in plan.turns] == [2, 3]
            assert plan.turns[0].request == "SECOND request"
            assert plan.turns[1].directive == "D1"
            assert [(a.turn, a.directive, a.action, a.attempt) for a in plan.attempts] == [
                (3, "D1", "implement", 1)]
            assert "-alpha two" in plan.diff and "+alpha one" in plan.diff
            assert not plan.acp_reset

            journal = journal_path(app, sid)
            size_before = journal.stat().st_size
            done = await app.rewinds.rewind(sid, 2, plan.digest)
            assert done.restored == ["a.txt"] and done.deleted == ["c/deep.txt", "d.txt"]
            assert done.turns == [2, 3]
            assert tree(project) == after_first
            assert not (project / "c").exists()  # the emptied directory went too
            # One rewind entry appended; the journal's earlier bytes untouched.
            written = entries(app, sid)
            assert journal.read_bytes()[:size_before].endswith(b"\n")
            rewinds = [e for e in written if e["type"] == "rewind"]
            assert len(rewinds) == 1 and rewinds[0]["before_turn"] == 2
            assert rewinds[0]["seq"] == done.seq == written[-1]["seq"]
            assert isinstance(app.events, RecordingSink)
            assert ("entry" in [k for s, k, p in app.events.events
                                if p.get("entry", {}).get("type") == "rewind" and s == sid])
            # The projection keeps turn 1 only; the next turn is 4 and sees turn 1 only.
            texts = [m.text for m in projection(written) if m.role == "user"]
            assert texts == ["FIRST request"]
            assert (await chat(app, sid, "FOURTH request")).turn == 4
            last = fake.api_requests("/v1/chat/completions")[-1].body
            users = [m["content"] for m in last["messages"] if m["role"] == "user"]
            assert users == ["FIRST request", "FOURTH request"]
            # Rewinding the same turn again is refused: it is gone.
            with pytest.raises(TandemError) as err:
                await app.rewinds.plan(sid, 2)
            assert err.value.code == "not-found" and "already rewound" in err.value.message
            # The user's own repository was not touched by checkpoints or the restore.
            status = subprocess.run(["git", "status", "--porcelain=v2", "-uall"], cwd=project,
                                    capture_output=True, check=True).stdout
            assert b"a.txt" in status and git_before == b""
            assert tree(project / ".git") == dot_git  # index, refs, objects: byte-identical
        finally:
            await app.turns.aclose()


async def test_external_change_is_shown_and_a_stale_plan_refused(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid, _ = await _three_turns(app, project)
            # Someone else edits a file after the last turn and between turns.
            (project / "a.txt").write_text("edited by hand\n")
            plan = await app.rewinds.plan(sid, 1)
            assert [(c.path, c.when) for c in plan.changed_externally] == [
                ("a.txt", "since turn 3 ended")]
            # The plan the user saw no longer holds once the files move again.
            (project / "b.txt").write_text("bee changed by hand\n")
            snapshot, journal = tree(project), journal_path(app, sid).read_bytes()
            with pytest.raises(TandemError) as err:
                await app.rewinds.rewind(sid, 1, plan.digest)
            assert err.value.code == "stale"
            assert tree(project) == snapshot and journal_path(app, sid).read_bytes() == journal
            fresh = await app.rewinds.plan(sid, 1)
            assert fresh.digest != plan.digest
            await app.rewinds.rewind(sid, 1, fresh.digest)
            assert (project / "a.txt").read_text() == "alpha\n"
            assert not (project / "b.txt").exists()
        finally:
            await app.turns.aclose()


async def test_change_between_turns_is_shown(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            await chat(app, sid, "FIRST request")
            (project / "b.txt").write_text("bee edited between turns\n")
            await chat(app, sid, "SECOND request")
            plan = await app.rewinds.plan(sid, 1)
            assert ("b.txt", "between turns 1 and 2") in [
                (c.path, c.when) for c in plan.changed_externally]
        finally:
            await app.turns.aclose()


async def test_fault_mid_restore_leaves_files_and_journal_as_before(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid, _ = await _three_turns(app, project)
            plan = await app.rewinds.plan(sid, 1)
            assert len(plan.to_restore) + len(plan.to_delete) >= 3
            files, journal = tree(project), journal_path(app, sid).read_bytes()
            touched: list[str] = []

            def fail_on_third(path: str) -> None:
                touched.append(path)
                if len(touched) == 3:
                    raise OSError(28, "No space left on device (injected)")

            with pytest.raises(TandemError) as err:
                await app.rewinds.rewind(sid, 1, plan.digest, before_file=fail_on_third)
            assert err.value.code == "restore-failed"
            assert len(touched) == 3
            assert tree(project) == files
            assert journal_path(app, sid).read_bytes() == journal
            # Nothing is stuck: the same plan still holds and now succeeds.
            assert (await app.rewinds.plan(sid, 1)).digest == plan.digest
            await app.rewinds.rewind(sid, 1, plan.digest)
            assert (project / "a.txt").read_text() == "alpha\n"
        finally:
            await app.turns.aclose()


async def test_journal_write_failure_puts_the_files_back(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid, _ = await _three_turns(app, project)
            plan = await app.rewinds.plan(sid, 2)
            files, journal = tree(project), journal_path(app, sid).read_bytes()
            live = app.sessions.journal(sid)

            def refuse(entry: object) -> object:
                raise TandemError("io", "Cannot append: disk full (injected)")

            monkeypatch.setattr(live, "append", refuse)
            with pytest.raises(TandemError) as err:
                await app.rewinds.rewind(sid, 2, plan.digest)
            assert err.value.code == "io"
            assert tree(project) == files
            assert journal_path(app, sid).read_bytes() == journal
        finally:
            await app.turns.aclose()


async def test_turn_patch_shows_one_turn(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid, _ = await _three_turns(app, project)
            reply = await turn_patch(app, TurnPatchParams(session=sid, turn=2))
            assert not reply.running and not reply.rewound
            assert sorted(f.path for f in reply.patch.files) == ["a.txt", "c/deep.txt"]
            assert "+alpha two" in reply.patch.diff and "+deep" in reply.patch.diff
            assert reply.patch.completeness == "captured"
            with pytest.raises(TandemError) as err:
                await turn_patch(app, TurnPatchParams(session=sid, turn=9))
            assert err.value.code == "not-found"
            plan = await app.rewinds.plan(sid, 2)
            await app.rewinds.rewind(sid, 2, plan.digest)
            again = await turn_patch(app, TurnPatchParams(session=sid, turn=2))
            assert again.rewound and again.patch.diff == reply.patch.diff
        finally:
            await app.turns.aclose()


async def test_turns_lists_what_a_prompt_offers(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid, _ = await _three_turns(app, project)
            rows = (await turns(app, TurnsParams(session=sid))).turns
            assert [(r.turn, r.origin, r.outcome, r.rewound) for r in rows] == [
                (1, "chat", "succeeded", False), (2, "chat", "succeeded", False),
                (3, "directive", "succeeded", False)]
            assert rows[0].request == "FIRST request"
            assert sorted(rows[1].files) == ["a.txt", "c/deep.txt"]
            plan = await app.rewinds.plan(sid, 2)
            await app.rewinds.rewind(sid, 2, plan.digest)
            again = (await turns(app, TurnsParams(session=sid))).turns
            assert [r.turn for r in again if r.rewound] == [2, 3]
            # The newest rows only, and the shown ones only: what a long history's
            # caller asks for instead of every row.
            newest = (await turns(app, TurnsParams(session=sid, last=2))).turns
            assert [r.turn for r in newest] == [2, 3]
            shown = (await turns(app, TurnsParams(session=sid, last=2, hide_rewound=True))).turns
            assert [(r.turn, r.rewound) for r in shown] == [(1, False)]
            for bad in ({"last": 0}, {"last": -1}, {"last": "x"}, {"last": 100_001}):
                with pytest.raises(ValueError):
                    TurnsParams.model_validate({"session": sid, **bad})
        finally:
            await app.turns.aclose()
