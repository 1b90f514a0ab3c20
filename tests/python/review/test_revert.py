"""Revert hunks and files of a turn through the real engine, checkpoints and HTTP model."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI

from rewind.helpers import chat, entries, journal_path, new_session, tree, use, writes
from tandem.adapters.review import before
from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.protocol.review import BeforeParams

pytestmark = pytest.mark.anyio

OLD = "".join(f"line {i}\n" for i in range(1, 21))
NEW = OLD.replace("line 2\n", "LINE 2\n").replace("line 19\n", "LINE 19\n")
SCRIPT = [*writes(("a.txt", NEW), ("b.txt", "bee\n")), *writes(("c.txt", "sea\n"))]


async def _turn_one(app: App, project: Path) -> str:
    (project / "a.txt").write_text(OLD)
    sid = await new_session(app, project)
    assert (await chat(app, sid, "FIRST")).outcome == "succeeded"
    return sid


async def test_revert_one_hunk_then_the_next_turn_starts_from_it(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid = await _turn_one(app, project)
            entry = (await app.review.revert(sid, 1, "a.txt", 1, "@@ -16,5 +16,5 @@")).root
            assert (project / "a.txt").read_text() == OLD.replace("line 2\n", "LINE 2\n")
            assert entry["type"] == "revert" and entry["of_turn"] == 1
            assert entry["paths"] == ["a.txt"] and entry["restored"] == ["a.txt"]
            assert entries(app, sid)[-1]["seq"] == entry["seq"]
            # The same hunk again: git finds its new side nowhere.
            with pytest.raises(TandemError) as err:
                await app.review.revert(sid, 1, "a.txt", 1, None)
            assert err.value.code == "conflict"
            # The other hunk still applies (the file's reference is the revert's after).
            await app.review.revert(sid, 1, "a.txt", 0, None)
            assert (project / "a.txt").read_text() == OLD
            # A rewind sees tandem's own revert, not an outside change.
            plan = await app.rewinds.plan(sid, 1)
            assert plan.changed_externally == []
            # The next turn's pre-turn checkpoint holds the reverted file.
            assert (await chat(app, sid, "SECOND")).outcome == "succeeded"
            start = [e for e in entries(app, sid) if e["type"] == "turn_start"][-1]
            cp = app.checkpoints.for_root(project)
            patch = cp.diff(start["checkpoint"])
            assert [f.path for f in patch.files] == ["c.txt"]
            # Whole file: the created b.txt goes.
            done = (await app.review.revert(sid, 1, "b.txt", None, None)).root
            assert done["deleted"] == ["b.txt"] and not (project / "b.txt").exists()
            seen = await before(app, BeforeParams(session=sid, turn=1, path="a.txt"))
            assert seen.exists and seen.text == OLD
            fresh = await before(app, BeforeParams(session=sid, turn=1, path="b.txt"))
            assert not fresh.exists and fresh.text == ""
        finally:
            await app.turns.aclose()


async def test_revert_refused_after_an_outside_edit_and_a_wrong_hunk(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid = await _turn_one(app, project)
            journal = journal_path(app, sid).read_bytes()
            with pytest.raises(TandemError) as err:
                await app.review.revert(sid, 1, "a.txt", 0, "@@ -9,7 +9,7 @@")
            assert err.value.code == "stale"
            with pytest.raises(TandemError) as err:
                await app.review.revert(sid, 1, "a.txt", 5, None)
            assert err.value.code == "not-found"
            with pytest.raises(TandemError) as err:
                await app.review.revert(sid, 1, "b.txt", 0, None)
            assert err.value.code == "invalid" and "reverted whole" in err.value.message
            with pytest.raises(TandemError) as err:
                await app.review.revert(sid, 1, "nope.txt", None, None)
            assert err.value.code == "not-found"
            (project / "a.txt").write_text(NEW + "by hand\n")
            files = tree(project)
            with pytest.raises(TandemError) as err:
                await app.review.revert(sid, 1, "a.txt", 0, None)
            assert err.value.code == "stale" and "changed since the turn" in err.value.message
            assert tree(project) == files
            assert journal_path(app, sid).read_bytes() == journal
        finally:
            await app.turns.aclose()


async def test_revert_refused_when_a_later_turn_changed_the_file(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = [*writes(("a.txt", NEW)), *writes(("a.txt", NEW + "more\n"))]
    with FakeOpenAI(script) as fake:
        use(fake, monkeypatch)
        try:
            sid = await _turn_one(app, project)
            assert (await chat(app, sid, "SECOND")).outcome == "succeeded"
            with pytest.raises(TandemError) as err:
                await app.review.revert(sid, 1, "a.txt", 0, None)
            assert err.value.code == "stale" and "turn 2 changed it" in err.value.message
            await app.review.revert(sid, 2, "a.txt", None, None)
            assert (project / "a.txt").read_text() == NEW
        finally:
            await app.turns.aclose()


async def test_binary_and_renamed_files_revert_whole(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "blob.bin").write_bytes(b"\x00\x01old")
    (project / "old.txt").write_text(OLD)
    script = [*writes(("blob.bin", "\x00\x02new"))]
    with FakeOpenAI(script) as fake:
        use(fake, monkeypatch)
        try:
            sid = await new_session(app, project)
            # The fake model only writes files; the rename is done by hand right
            # after the pre-turn checkpoint, so it lands in turn 1's patch.
            turn_engine = app.turns.engine
            original = turn_engine.checkpoints.before

            async def before_then_rename(root: Path, session: str, turn: int) -> str | None:
                made = await original(root, session, turn)
                (project / "old.txt").rename(project / "new.txt")
                (project / "new.txt").write_text(NEW)
                return made

            monkeypatch.setattr(turn_engine.checkpoints, "before", before_then_rename)
            assert (await chat(app, sid, "FIRST")).outcome == "succeeded"
            files = {f["path"]: f for f in [e for e in entries(app, sid)
                                            if e["type"] == "turn_end"][-1]["patch"]["files"]}
            assert files["new.txt"]["status"] == "renamed" and files["blob.bin"]["binary"]
            with pytest.raises(TandemError) as err:
                await app.review.revert(sid, 1, "blob.bin", 0, None)
            assert err.value.code == "invalid" and "binary" in err.value.message
            await app.review.revert(sid, 1, "blob.bin", None, None)
            assert (project / "blob.bin").read_bytes() == b"\x00\x01old"
            # A hunk of the renamed file reverts in place, under its new name.
            await app.review.revert(sid, 1, "new.txt", 0, None)
            assert (project / "new.txt").read_text() == OLD.replace("line 19\n", "LINE 19\n")
            done = (await app.review.revert(sid, 1, "new.txt", None, None)).root
            assert done["paths"] == ["new.txt", "old.txt"]
            assert not (project / "new.txt").exists()
            assert (project / "old.txt").read_text() == OLD
        finally:
            await app.turns.aclose()


async def test_entry_that_cannot_be_written_puts_the_files_back(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid = await _turn_one(app, project)
            files, journal = tree(project), journal_path(app, sid).read_bytes()
            live = app.sessions.journal(sid)

            def refuse(_entry: object) -> None:
                raise TandemError("io", "disk full (injected)")

            monkeypatch.setattr(live, "append", refuse)
            with pytest.raises(TandemError) as err:
                await app.review.revert(sid, 1, "a.txt", 0, None)
            assert err.value.code == "io"
            assert tree(project) == files
            assert journal_path(app, sid).read_bytes() == journal
            assert app.gate.holder(sid) is None  # the session takes turns again
        finally:
            await app.turns.aclose()
