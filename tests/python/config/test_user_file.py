"""The user's settings file as Emacs's first-run setup writes it (``settings/save-user``).

One configuration: what Emacs saves is what ``tandem ask`` and the doctor read.
A change merges into the file; nothing is written when the file or the result
does not validate; the file is private whatever the umask.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tandem.config.layers import resolve, user_settings_path
from tandem.config.user_file import changed_keys, save_user_settings
from tandem.protocol.base import TandemError


def _user_file() -> Path:
    return user_settings_path()


def test_save_merges_into_what_the_file_holds_and_is_private(tmp_path: Path) -> None:
    target = _user_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"native": {"max_steps": 7}, "auto_compact": False}))
    old = os.umask(0o022)
    try:
        path = save_user_settings({"default_provider": "openai:m",
                                   "openai": {"base_url": "http://127.0.0.1:9/v1"}})
    finally:
        os.umask(old)
    assert path == target
    data = json.loads(target.read_text())
    assert data == {"native": {"max_steps": 7}, "auto_compact": False,
                    "default_provider": "openai:m",
                    "openai": {"base_url": "http://127.0.0.1:9/v1"}}
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    # What the CLI resolves is what was saved.
    resolved = resolve(None, tmp_path)
    assert resolved.plain()["default_provider"] == "openai:m"
    assert resolved.plain()["openai"]["base_url"] == "http://127.0.0.1:9/v1"


def test_a_null_removes_a_key_and_an_emptied_section() -> None:
    save_user_settings({"openai": {"base_url": "http://127.0.0.1:9/v1"}, "auto_compact": True})
    save_user_settings({"openai": {"base_url": None}, "auto_compact": None})
    assert json.loads(_user_file().read_text()) == {}


@pytest.mark.parametrize("changes", [
    {"permission_mode": "yolo"},
    {"native": {"max_steps": "3"}},
    {"no_such_key": 1},
    {"compaction_threshold": float("nan")},
])
def test_a_bad_value_is_refused_and_the_file_left_as_it_was(changes: dict[str, object]) -> None:
    save_user_settings({"permission_mode": "ask"})
    before = _user_file().read_bytes()
    with pytest.raises(TandemError) as err:
        save_user_settings(changes)
    assert err.value.code == "invalid-settings"
    assert _user_file().read_bytes() == before


def test_a_hand_written_file_that_does_not_parse_is_never_replaced() -> None:
    target = _user_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text('{"permission_mode": "ask",')  # the user is half-way through an edit
    with pytest.raises(TandemError) as err:
        save_user_settings({"default_provider": "openai:m"})
    assert err.value.code == "invalid-settings"
    assert target.read_text() == '{"permission_mode": "ask",'


def test_an_invalid_but_parseable_file_is_named_and_kept() -> None:
    target = _user_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text('{"permission_mode": "sometimes"}')
    with pytest.raises(TandemError) as err:
        save_user_settings({"default_provider": "openai:m"})
    assert "nothing was saved" in err.value.message
    assert target.read_text() == '{"permission_mode": "sometimes"}'


def test_changed_keys_are_dotted() -> None:
    assert changed_keys({"openai": {"base_url": "u"}, "default_provider": "p",
                         "acp_agents": {"claude": {"command": ["c"]}}}) == [
        "openai.base_url", "default_provider", "acp_agents.claude.command"]
