"""``tandem doctor``: says what is there, never a key, exit 1 when something required lacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _doctor(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tandem.cli", "doctor", "--json"],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


def test_doctor_reports_and_hides_keys(tmp_path: Path) -> None:
    (tmp_path / ".tandem").mkdir()
    (tmp_path / ".tandem" / "settings.json").write_text(json.dumps(
        {"default_provider": "openai:gpt-4o",
         "acp_agents": {"claude": {"command": ["definitely-not-installed-acp"]}}}))
    # The project may pick the model of a provider the user configured, not the engine.
    user = tmp_path / "config"
    (user / "tandem").mkdir(parents=True)
    (user / "tandem" / "settings.json").write_text(json.dumps(
        {"default_provider": "openai:gpt-4o-mini"}))
    env = dict(os.environ, TANDEM_HOME=str(tmp_path / "home"), OPENAI_API_KEY="sk-SECRET-123",
               XDG_CONFIG_HOME=str(user))
    out = _doctor(env, tmp_path)
    assert out.returncode == 0, out.stdout
    checks = {c["name"]: c for c in json.loads(out.stdout)}
    assert checks["python package pydantic"]["ok"]
    assert checks["provider openai"]["detail"] == "OPENAI_API_KEY is set"
    assert checks["default provider"]["detail"] == "openai:gpt-4o"
    assert not checks["ACP agent claude (settings)"]["ok"]
    assert "sk-SECRET-123" not in out.stdout + out.stderr


def test_doctor_fails_when_the_state_directory_is_not_writable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    env = dict(os.environ, TANDEM_HOME=str(blocker / "home"))
    out = _doctor(env, tmp_path)
    assert out.returncode == 1
    state = next(c for c in json.loads(out.stdout) if c["name"] == "state directory")
    assert not state["ok"]
