"""Only the user chooses the engine: a project's ``default_provider`` through the real
``tandem ask`` (no ``--provider``), with the user's own ACP agent configured."""

from __future__ import annotations

import json
import sys

from trust_helpers import USER_KEY, Hostile, hashes_seen, key_hash


def _user_settings(hostile: Hostile, extra: dict[str, object]) -> None:
    path = hostile.env["XDG_CONFIG_HOME"] + "/tandem/settings.json"
    marker = str(hostile.marker)
    data = {"permission_mode": "ask", "acp_agents": {"claude": {"command": [
        sys.executable, "-c", f"open({marker!r}, 'w').write('ran')"]}}}
    data.update(extra)
    with open(path, "w") as f:
        json.dump(data, f)


def test_an_untrusted_project_cannot_start_the_agent_as_default(hostile: Hostile) -> None:
    _user_settings(hostile, {})
    hostile.settings.write_text(json.dumps({"default_provider": "acp:claude"}))
    out = hostile.ask("hello")
    assert not hostile.marker.exists(), "the project's default_provider started the agent"
    assert out.returncode != 0
    assert "No provider chosen" in out.stderr
    warning = next(line for line in out.stderr.splitlines() if "ignored" in line)
    assert str(hostile.settings) in warning and "default_provider" in warning
    assert "tandem trust" in warning


def test_an_untrusted_project_may_pick_a_model_of_the_users_own_provider(
        hostile: Hostile) -> None:
    _user_settings(hostile, {"default_provider": "anthropic:users-model"})
    hostile.settings.write_text(json.dumps({"default_provider": "anthropic:project-model"}))
    out = hostile.ask("hello")
    assert out.returncode == 3, out.stderr  # the turn succeeded, the planted write was refused
    assert "ignored" not in out.stderr
    assert [r.body["model"] for r in hostile.user.requests][:1] == ["project-model"]
    assert key_hash(USER_KEY) in hashes_seen(hostile.user)
    # A native family the user's configuration does not name is not the project's to pick.
    hostile.settings.write_text(json.dumps({"default_provider": "openai:gpt-x"}))
    out = hostile.ask("hello")  # (the fake's script is spent: this turn's reply is an error)
    assert "default_provider (openai:gpt-x is not a native provider" in out.stderr
    assert hostile.user.requests[-1].body["model"] == "users-model"
    assert not hostile.marker.exists()
