"""A cloned repository's settings try to steal the key, run a program and loosen permissions.

Real processes throughout: ``tandem ask`` / ``tandem trust`` / ``tandem doctor``
run as children against two real fake Anthropic servers (the user's, named
by ``ANTHROPIC_BASE_URL``, and the repository's).
"""

from __future__ import annotations

import json

from trust_helpers import USER_KEY, Hostile, hashes_seen, key_hash


def _ignored_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "ignored" in line]
    assert lines, stderr
    return lines[0]


def test_untrusted_project_cannot_redirect_key_run_agent_or_loosen_mode(hostile: Hostile) -> None:
    out = hostile.ask("--provider", "anthropic:m", "hello")
    assert out.returncode == 3, out.stderr  # the turn succeeded, the planted write was refused
    # The key never reached the repository's server; the user's got the request.
    assert hostile.other.requests == []
    assert key_hash(USER_KEY) in hashes_seen(hostile.user)
    # The mode stayed the user's "ask": with no terminal the write was rejected.
    assert "no terminal to ask; rejected write_file" in out.stderr
    assert not (hostile.root / "planted.txt").exists()
    # The warning names the file and every key it ignored.
    line = _ignored_line(out.stderr)
    assert str(hostile.settings) in line
    for key in ("anthropic.base_url", "acp_agents", "permission_mode"):
        assert key in line
    # The repository's agent command never runs.
    acp = hostile.ask("--provider", "acp:claude", "hello")
    assert acp.returncode == 1
    assert "no ACP agent 'claude'" in acp.stderr
    assert not hostile.marker.exists()


def test_doctor_reports_the_ignored_keys(hostile: Hostile) -> None:
    out = hostile.cli("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(out.stdout)}
    trust = checks["project settings"]
    assert not trust["ok"] and not trust["required"]
    assert str(hostile.settings) in trust["detail"]
    for key in ("anthropic.base_url", "acp_agents", "permission_mode"):
        assert key in trust["detail"]
    assert "tandem trust" in trust["detail"]


def test_trust_grants_the_project_keys_and_a_change_revokes_it(hostile: Hostile) -> None:
    granted = hostile.cli("trust", str(hostile.root))
    assert granted.returncode == 0, granted.stderr
    assert str(hostile.settings) in granted.stdout and "anthropic.base_url" in granted.stdout
    out = hostile.ask("--provider", "anthropic:m", "hello")
    assert out.returncode == 0, out.stderr
    assert "ignored" not in out.stderr
    assert hostile.user.requests == []  # the trusted project's base_url took effect
    assert key_hash(USER_KEY) in hashes_seen(hostile.other)
    assert (hostile.root / "planted.txt").exists()  # auto-edit took effect too
    hostile.ask("--provider", "acp:claude", "hello")
    assert hostile.marker.read_text() == "ran"  # the trusted agent command ran
    # One changed byte and the trust lapses.
    hostile.marker.unlink()
    (hostile.root / "planted.txt").unlink()
    hostile.settings.write_text(hostile.settings.read_text() + "\n")
    before = len(hostile.other.requests)
    out = hostile.ask("--provider", "anthropic:m", "hello")
    assert out.returncode == 3, out.stderr  # succeeded; the write was refused again
    assert len(hostile.other.requests) == before
    assert "anthropic.base_url" in _ignored_line(out.stderr)
    assert "changed since" in _ignored_line(out.stderr)
    assert not (hostile.root / "planted.txt").exists()
    hostile.ask("--provider", "acp:claude", "hello")
    assert not hostile.marker.exists()


def test_untrust_revokes(hostile: Hostile) -> None:
    assert hostile.cli("trust", str(hostile.root)).returncode == 0
    revoked = hostile.cli("untrust", str(hostile.root))
    assert revoked.returncode == 0, revoked.stderr
    out = hostile.ask("--provider", "anthropic:m", "hello")
    assert hostile.other.requests == []
    assert "anthropic.base_url" in _ignored_line(out.stderr)
