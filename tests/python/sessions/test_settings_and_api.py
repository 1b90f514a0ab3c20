"""Settings layers and the Emacs-facing methods (called as the server calls them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.sessions.settings import Settings, merge, user_settings_path
from tandem.store.journal import Journal

from .adapter_app import call, plain_call


def test_user_settings_path_respects_xdg(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert user_settings_path() == tmp_path / "tandem" / "settings.json"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert user_settings_path() == tmp_path / "h" / ".config" / "tandem" / "settings.json"


def test_merge_is_deep_and_project_wins() -> None:
    user = {"a": 1, "nested": {"x": 1, "y": 2}, "list": [1]}
    proj = {"nested": {"y": 3}, "list": [2], "b": 2}
    assert merge(user, proj) == {"a": 1, "nested": {"x": 1, "y": 3}, "list": [2], "b": 2}
    assert user == {"a": 1, "nested": {"x": 1, "y": 2}, "list": [1]}


def test_invalid_settings_are_reported(config: Path, project) -> None:
    p = project("p")
    (p / ".tandem").mkdir()
    (p / ".tandem" / "settings.json").write_text("{nope")
    with pytest.raises(TandemError) as exc:
        Settings(str(p), config / "tandem" / "settings.json")
    assert exc.value.code == "invalid-settings" and "settings.json" in exc.value.message
    (p / ".tandem" / "settings.json").write_text("[1]")
    with pytest.raises(TandemError):
        Settings(str(p), config / "tandem" / "settings.json")


def test_set_validates_and_flush_writes_atomically(config: Path, project) -> None:
    p = project("p", {"model": "m"})
    s = Settings(str(p), config / "tandem" / "settings.json")
    with pytest.raises(TandemError):
        s.set("", 1)
    with pytest.raises(TandemError):
        s.set("k", object())
    with pytest.raises(TandemError):
        s.set("k", 1, scope="galaxy")  # type: ignore[arg-type]
    s.set("model", "new")
    s.set("theme", "light", scope="user")
    s.flush()
    assert json.loads((p / ".tandem" / "settings.json").read_text()) == {"model": "new"}
    assert json.loads((config / "tandem" / "settings.json").read_text())["theme"] == "light"
    assert not s.dirty




def test_methods_are_in_the_server_table() -> None:
    from tandem.server.table import build_table

    table = build_table()
    for name in [
        "sessions/list",
        "sessions/new",
        "sessions/resume",
        "sessions/open-file",
        "sessions/switch",
        "sessions/continue",
        "sessions/entries",
        "sessions/relocate",
        "sessions/lookup",
        "sessions/current",
        "sessions/close",
    ]:
        assert name in table


def test_api_resume_flow_with_consent(app: App, project) -> None:
    a, b = project("a"), project("b", {"model": "b-model"})
    made = call(app, "sessions/new", cwd=str(a), title="t")
    assert made.settings["model"] == "user-model"
    call(app, "sessions/close", session=made.id)
    shutil.rmtree(a)
    found = plain_call(app, "sessions/lookup", query=made.id[:8], cwd=str(b))
    assert found["cwd_exists"] is False and found["prompt"].endswith("[Y/n] ")
    with pytest.raises(TandemError) as exc:
        call(app, "sessions/resume", query=made.id, cwd=str(b))
    assert exc.value.code == "needs-terminal"
    with pytest.raises(TandemError) as exc:
        call(app, "sessions/resume", query=made.id, cwd=str(b), relocate=False)
    assert exc.value.code == "cancelled"
    assert exc.value.message == "Resume cancelled: session was not moved."
    info = call(app, "sessions/resume", query=made.id, cwd=str(b), relocate=True)
    assert info.relocated and info.id == made.id and info.cwd == str(b)
    assert info.settings["model"] == "b-model"
    assert call(app, "sessions/current").id == made.id


def test_api_entries_paging(app: App, project) -> None:
    a = project("a")
    made = call(app, "sessions/new", cwd=str(a))
    j = app.sessions.manager.journal(made.id)
    for i in range(7):
        j.append({"type": "user", "turn": i + 1, "text": str(i)})
    page = plain_call(app, "sessions/entries", session=made.id, after=2, limit=3)
    assert [e["seq"] for e in page["entries"]] == [3, 4, 5] and page["last_seq"] == 7
    page = plain_call(app, "sessions/entries", session=made.id[:13], before=3)
    assert [e["seq"] for e in page["entries"]] == [1, 2]
    with pytest.raises(ValidationError):
        plain_call(app, "sessions/entries", session=made.id, limit=0)


def test_api_open_switch_continue_list_relocate(app: App, project, home: Path) -> None:
    a, b, c = project("a"), project("b"), project("c")
    s1 = call(app, "sessions/new", cwd=str(a), title="one")
    s2 = call(app, "sessions/new", cwd=str(c), title="two")
    rows = plain_call(app, "sessions/list", all=True)
    assert {r["id"] for r in rows} == {s1.id, s2.id}
    assert [r["id"] for r in plain_call(app, "sessions/list", cwd=str(a))] == [s1.id]
    opened = call(app, "sessions/open-file", path=s1.path, cwd=str(b))
    assert opened.active_cwd == str(a)
    switched = call(app, "sessions/switch", target=s2.path)
    assert switched.id == s2.id and switched.active_cwd == str(c)
    cont = call(app, "sessions/continue", cwd=str(a))
    assert cont.id == s1.id
    call(app, "sessions/close", session=s2.id)
    moved = plain_call(app, "sessions/relocate", target=s2.id, cwd=str(b))
    assert moved["cwd"] == str(b) and moved["previous_files"] == [s2.path]
    with pytest.raises(TandemError):
        plain_call(app, "sessions/relocate", target=s1.id, cwd=str(b))  # open here: refused
    with pytest.raises(TandemError):
        call(app, "sessions/new", cwd="relative/dir")


def test_api_journal_is_shared_with_other_domains(app: App, project) -> None:
    """Other layers write through the manager's journal: one writer, this process."""
    a = project("a")
    made = call(app, "sessions/new", cwd=str(a))
    j = app.sessions.manager.journal(made.id)
    assert j.writable
    other = Journal.open(j.path)
    assert not other.writable
    other.close()
