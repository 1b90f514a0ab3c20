"""The seed rows again, in-process through `SessionManager` with answers
injected at the prompt seam, asserting the applied cwd-scoped settings too;
plus row 6 (runtime switch), which only exists in a running backend."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tandem.protocol.base import TandemError
from tandem.sessions.manager import CANCELLED, ResumeCancelled, SessionManager
from tandem.store import layout
from tandem.store.journal import Journal, read_header


@pytest.fixture
def mgr(home: Path, config: Path):
    user = config / "tandem" / "settings.json"
    m = SessionManager(home, breadcrumb_key="test", user_settings=user)
    yield m
    m.close()


def seeded(mgr: SessionManager, cwd: Path, title: str = "t") -> Journal:
    j = mgr.new(str(cwd), title).journal
    j.append({"type": "user", "turn": 1, "text": "hello"})
    j.artifacts_dir.mkdir(exist_ok=True)
    (j.artifacts_dir / "blob").write_text("x")
    j.sync()
    mgr.close(j.id)
    return j


def test_row1_resume_id_adopts_project_and_settings(mgr, project) -> None:
    a = project("a", {"model": "a-model"})
    b = project("b", {"model": "b-model"})
    j = seeded(mgr, a)
    mgr.caches["ctx"] = "cached for b"
    asked: list[str] = []
    active = mgr.resume_id(j.id[:9], str(b), lambda q: asked.append(q) or True)
    assert asked == []
    assert active.journal.id == j.id and active.journal.path == j.path
    assert active.active_cwd == str(a) and active.relocated is False
    assert mgr.settings.get("model") == "a-model"  # project wins
    assert mgr.settings.get("theme") == "dark"  # user layer still there
    assert mgr.caches == {}


def test_row2_accept_moves_same_identity(mgr, project, home) -> None:
    a = project("a", {"model": "a-model"})
    b = project("b", {"model": "b-model"})
    j = seeded(mgr, a)
    shutil.rmtree(a)
    asked: list[str] = []
    active = mgr.resume_id(j.id, str(b), lambda q: asked.append(q) or True)
    assert asked == [
        f"Session's directory no longer exists ({a}). "
        "Move (re-root) it into the current directory? [Y/n] "
    ]
    assert active.relocated and active.journal.id == j.id
    assert active.journal.path.parent == layout.slug_dir(home, str(b))
    assert active.journal.header.cwd == str(b)
    assert active.journal.header.previous_files == [str(j.path)]
    assert active.active_cwd == str(b)
    assert mgr.settings.get("model") == "b-model"
    assert active.journal.writable
    assert (active.journal.artifacts_dir / "blob").read_text() == "x"


def test_row3_decline_returns_no_session(mgr, project) -> None:
    a, b = project("a"), project("b", {"model": "b-model"})
    j = seeded(mgr, a)
    before = j.path.read_bytes()
    shutil.rmtree(a)
    with pytest.raises(ResumeCancelled) as exc:
        mgr.resume_id(j.id, str(b), lambda q: False)
    assert exc.value.message == CANCELLED
    assert mgr.current is None and mgr.journals == {}
    assert j.path.read_bytes() == before


def test_row4_no_consent_available(mgr, project) -> None:
    a, b = project("a"), project("b")
    j = seeded(mgr, a)
    shutil.rmtree(a)
    with pytest.raises(TandemError) as exc:
        mgr.resume_id(j.id, str(b), None)
    assert exc.value.code == "needs-terminal" and "interactively" in exc.value.message
    assert j.path.exists() and mgr.current is None


def test_row5_open_file_falls_back_to_launch(mgr, project) -> None:
    a, b = project("a"), project("b", {"model": "b-model"})
    j = seeded(mgr, a)
    before = j.path.read_bytes()
    shutil.rmtree(a)
    active = mgr.open_file(str(j.path), str(b))
    assert active.journal.path == j.path and active.journal.header.cwd == str(a)
    assert active.active_cwd == str(b) and not active.relocated
    assert mgr.settings.get("model") == "b-model"
    assert j.path.read_bytes() == before


def test_row6_switch_keeps_active_cwd(mgr, project) -> None:
    a, x = project("a"), project("x", {"model": "x-model"})
    target = seeded(mgr, a)
    before = target.path.read_bytes()
    shutil.rmtree(a)
    current = mgr.new(str(x), "current")
    assert current.active_cwd == str(x)
    switched = mgr.switch(str(target.path))
    assert switched.journal.id == target.id and switched.journal.path == target.path
    assert switched.active_cwd == str(x)
    assert mgr.settings.get("model") == "x-model"
    assert target.path.read_bytes() == before
    # By id too.
    mgr.switch(current.journal.id)
    assert mgr.switch(target.id[:12]).active_cwd == str(x)


def test_row6_switch_to_live_project_adopts_it(mgr, project) -> None:
    a = project("a", {"model": "a-model"})
    x = project("x", {"model": "x-model"})
    target = seeded(mgr, a)
    mgr.new(str(x))
    switched = mgr.switch(target.id)
    assert switched.active_cwd == str(a) and mgr.settings.get("model") == "a-model"


def test_settings_save_failure_blocks_switch(mgr, project) -> None:
    a, x = project("a", {"model": "a-model"}), project("x", {"model": "x-model"})
    target = seeded(mgr, a)
    current = mgr.new(str(x))
    mgr.settings.set("model", "changed")
    # A directory where the settings file must go: the real rename fails.
    (x / ".tandem" / "settings.json").unlink()
    (x / ".tandem" / "settings.json").mkdir()
    with pytest.raises(TandemError) as exc:
        mgr.switch(str(target.path))
    assert exc.value.code == "settings-save-failed"
    assert mgr.current is current and mgr.current.active_cwd == str(x)
    assert mgr.settings.get("model") == "changed" and mgr.settings.dirty
    assert target.id not in mgr.journals
    # Once the file can be written, the switch goes through and the change is saved.
    (x / ".tandem" / "settings.json").rmdir()
    assert mgr.switch(str(target.path)).active_cwd == str(a)
    assert '"changed"' in (x / ".tandem" / "settings.json").read_text()


def test_row7_picker_path_is_open_file(mgr, project) -> None:
    a, b = project("a"), project("b")
    j = seeded(mgr, a)
    shutil.rmtree(a)
    rows = mgr.list(None)
    assert rows[0].id == j.id and rows[0].cwd_exists is False
    active = mgr.open_file(rows[0].path, str(b))
    assert active.active_cwd == str(b) and active.journal.path == j.path


def test_row8_continue_reroots_breadcrumb(mgr, project, home) -> None:
    a, b = project("a"), project("b", {"model": "b-model"})
    j = seeded(mgr, a)
    shutil.rmtree(a)
    active = mgr.continue_recent(str(b))
    assert active.relocated and active.journal.id == j.id
    assert active.journal.header.cwd == str(b) and active.active_cwd == str(b)
    assert active.journal.path.parent == layout.slug_dir(home, str(b))
    assert mgr.settings.get("model") == "b-model"


def test_row9_continue_prefers_destination_history(mgr, project) -> None:
    a, b = project("a"), project("b")
    own = seeded(mgr, b, "own")
    lost = seeded(mgr, a, "lost")
    before = lost.path.read_bytes()
    shutil.rmtree(a)
    active = mgr.continue_recent(str(b))
    assert active.journal.id == own.id and not active.relocated
    assert lost.path.read_bytes() == before


def test_continue_live_elsewhere_starts_fresh(mgr, project) -> None:
    """A breadcrumb into a project that still exists is not adopted by another one."""
    a, b = project("a"), project("b")
    other = seeded(mgr, a)
    active = mgr.continue_recent(str(b))
    assert active.journal.id != other.id and active.journal.header.cwd == str(b)
    assert not active.relocated and other.path.exists()


def test_resume_refuses_move_of_session_held_elsewhere(mgr, project, home) -> None:
    """The move is refused while another holder has the journal open."""
    a, b = project("a"), project("b")
    j = seeded(mgr, a)
    shutil.rmtree(a)
    holder = Journal.open(j.path)  # another opener (separate lock file description)
    try:
        with pytest.raises(TandemError) as exc:
            mgr.resume_id(j.id, str(b), lambda q: True)
        assert exc.value.code == "busy"
        assert "Nothing was moved" in exc.value.message
        assert j.path.exists() and read_header(j.path)[0].cwd == str(a)
    finally:
        holder.close()


def test_new_validates_input(mgr, tmp_path) -> None:
    with pytest.raises(TandemError):
        mgr.new(str(tmp_path / "missing"))
    with pytest.raises(TandemError):
        mgr.new(str(tmp_path), "two\nlines")
    assert mgr.list(None) == []


def test_resume_id_moves_a_session_this_manager_had_opened_directly(mgr, project) -> None:
    """Opened by path first (held here), then resumed by id with consent: it moves."""
    a, b = project("a"), project("b")
    j = seeded(mgr, a)
    shutil.rmtree(a)
    direct = mgr.open_file(str(j.path), str(b))
    assert not direct.relocated and direct.journal.writable
    moved = mgr.resume_id(j.id, str(b), lambda q: True)
    assert moved.relocated and moved.journal.writable and moved.journal.path != j.path
    assert not direct.journal.writable  # the old handle was closed, not left writing
