"""The guard ``make test`` runs first and last: it fails when the user's tandem dirs changed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GUARD = Path(__file__).resolve().parents[2] / "home_guard.py"


def _guard(command: str, record: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(GUARD), command, str(record)], env=env,
                          capture_output=True, text=True, timeout=60)


def _user(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A user's home with the XDG variables unset (the defaults under HOME apply)."""
    home = tmp_path / "user"
    (home / ".local" / "state" / "tandem" / "sessions").mkdir(parents=True)
    (home / ".config" / "tandem").mkdir(parents=True)
    (home / ".config" / "tandem" / "settings.json").write_text("{}")
    (home / ".emacs.d" / "elpa").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("XDG_") and k != "TANDEM_HOME"}
    env["HOME"] = str(home)
    return home, env


def test_nothing_changed_passes(tmp_path: Path) -> None:
    home, env = _user(tmp_path)
    record = tmp_path / "guard.json"
    assert _guard("snapshot", record, env).returncode == 0
    (home / ".emacs.d" / "elpa" / "magit-1.0").mkdir()  # not tandem's: not watched
    done = _guard("check", record, env)
    assert done.returncode == 0, done.stderr
    assert "as before" in done.stdout


def test_a_session_appearing_in_the_users_state_fails_and_is_named(tmp_path: Path) -> None:
    home, env = _user(tmp_path)
    record = tmp_path / "guard.json"
    assert _guard("snapshot", record, env).returncode == 0
    leaked = home / ".local" / "state" / "tandem" / "sessions" / "project-1" / "x.jsonl"
    leaked.parent.mkdir()
    leaked.write_text("{}\n")
    done = _guard("check", record, env)
    assert done.returncode == 1
    assert f"appeared: {leaked}" in done.stderr


def test_changed_config_emacs_package_and_data_dir_fail(tmp_path: Path) -> None:
    home, env = _user(tmp_path)
    record = tmp_path / "guard.json"
    assert _guard("snapshot", record, env).returncode == 0
    (home / ".config" / "tandem" / "settings.json").write_text('{"model": "x"}')
    (home / ".emacs.d" / "elpa" / "tandem-0.1").mkdir()
    (home / ".local" / "share" / "tandem" / "venv").mkdir(parents=True)
    done = _guard("check", record, env)
    assert done.returncode == 1
    assert f"changed: {home / '.config' / 'tandem' / 'settings.json'}" in done.stderr
    assert f"appeared: {home / '.emacs.d' / 'elpa' / 'tandem-0.1'}" in done.stderr
    assert f"appeared: {home / '.local' / 'share' / 'tandem'}" in done.stderr


def test_an_explicit_tandem_home_and_xdg_dirs_are_watched(tmp_path: Path) -> None:
    home, env = _user(tmp_path)
    env.update(TANDEM_HOME=str(tmp_path / "explicit"), XDG_STATE_HOME=str(tmp_path / "state"))
    record = tmp_path / "guard.json"
    assert _guard("snapshot", record, env).returncode == 0
    (tmp_path / "explicit").mkdir()
    (tmp_path / "state" / "tandem").mkdir(parents=True)
    done = _guard("check", record, env)
    assert done.returncode == 1
    assert f"appeared: {tmp_path / 'explicit'}" in done.stderr
    assert f"appeared: {tmp_path / 'state' / 'tandem'}" in done.stderr
