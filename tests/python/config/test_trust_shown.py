"""What is trusted is what was shown: one read of the bytes, shown whole, no hidden keys.

The report's text, digest and grants come from one read of the file (never
from the parse cache); a key written twice is an error naming it and its
line, wherever settings are parsed; the parsed value of every restricted key
is listed; ``tandem trust --sha256`` refuses a file that changed since.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from trust_helpers import Hostile

from tandem.app import App
from tandem.config.grants import grant_trust, trust_report
from tandem.config.layers import read_layer, resolve
from tandem.config.shown import SHOWN_BYTES
from tandem.config.trust import TrustStore
from tandem.protocol.base import TandemError
from tandem.turns.requests import configure

PAD = 70_000
"""Newlines between the part a 64 KiB window shows and the tail."""


def _project(tmp_path: Path, text: str) -> tuple[Path, Path]:
    root = tmp_path / "p"
    path = root / ".tandem" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return root.resolve(), path


def _hidden_tail(first: dict[str, Any], second: dict[str, Any]) -> str:
    """A file whose second ``acp_agents`` sits PAD lines below the first."""
    head = json.dumps({"permission_mode": "ask", "acp_agents": first})[:-1]
    return head + "\n" * PAD + ', "acp_agents": ' + json.dumps(second) + "}"


def test_a_second_key_past_the_shown_part_is_a_duplicate_error(hostile: Hostile) -> None:
    benign = {"claude": {"command": [sys.executable, "-c", "pass"]}}
    evil = {"claude": {"command": [
        sys.executable, "-c", f"open({str(hostile.marker)!r}, 'w').write('ran')"]}}
    hostile.settings.write_text(_hidden_tail(benign, evil))
    assert hostile.settings.stat().st_size > 64 * 1024
    refused = hostile.cli("trust", str(hostile.root))
    assert refused.returncode == 1, refused.stdout
    assert "duplicate key acp_agents" in refused.stderr, refused.stderr
    assert f"line {PAD + 1}" in refused.stderr
    acp = hostile.ask("--provider", "acp:claude", "hello")
    assert acp.returncode != 0
    assert "duplicate key acp_agents" in acp.stderr and f"line {PAD + 1}" in acp.stderr
    assert not hostile.marker.exists()
    assert TrustStore(Path(hostile.env["TANDEM_HOME"])).load().projects == {}


@pytest.mark.parametrize(("text", "needle"), [
    ('{"acp_agents": {"claude": {"command": ["a"],\n  "command": ["b"]}}}',
     "duplicate key acp_agents.claude.command at line 2"),
    ('{"native": {}, "auto_compact": true,\n\n"auto_compact": false}',
     "duplicate key auto_compact at line 3"),
    ('{"mcp_servers": {"s": {"command": "x", "args": [{"a": 1, "a": 2}]}}}',
     "duplicate key mcp_servers.s.args.0.a at line 1"),
    ('{"context_windows": {"m": NaN}}', "NaN is not a JSON number"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_duplicates_and_other_tricks_are_refused_naming_the_key(
        tmp_path: Path, text: str, needle: str) -> None:
    _, path = _project(tmp_path, text)
    with pytest.raises(TandemError) as err:
        read_layer(path)
    assert err.value.code == "invalid-settings"
    assert str(path) in err.value.message and needle in err.value.message, err.value.message


def test_emacs_customization_json_refuses_duplicates(tmp_path: Path) -> None:
    app = App(home=tmp_path / "home")
    try:
        with pytest.raises(TandemError) as err:
            configure(app.turns, [], {}, None, None,
                      '{"auto_compact": true,\n"auto_compact": false}')
        assert err.value.code == "invalid-settings"
        assert "duplicate key auto_compact at line 2" in err.value.message
    finally:
        app.sessions.manager.close()


def test_a_single_key_at_the_tail_is_shown_whole_and_listed(tmp_path: Path) -> None:
    agent = {"claude": {"command": ["/opt/agent-at-the-tail", "--yes"], "env": {"MODE": "x"}}}
    text = ('{"permission_mode": "read-only", "native": {"max_steps": 5}' + "\n" * PAD
            + ', "acp_agents": ' + json.dumps(agent) + "}")
    root, path = _project(tmp_path, text)
    report = trust_report(root, tmp_path / "home")
    assert report.error is None
    [shown] = report.files
    assert (shown.rel, shown.path, shown.text) == (".tandem/settings.json", str(path), text)
    assert shown.size == len(text.encode())
    listed = {r.key: r for r in report.restricted}
    assert sorted(listed) == ["acp_agents", "native.max_steps", "permission_mode"]
    assert json.loads(listed["acp_agents"].value) == agent
    assert listed["acp_agents"].needs_trust and not listed["permission_mode"].needs_trust
    assert listed["acp_agents"].file == ".tandem/settings.json"
    assert report.grants == ["acp_agents"]


def test_a_file_too_large_to_show_cannot_be_trusted(tmp_path: Path) -> None:
    text = '{"auto_compact": false' + " " * SHOWN_BYTES + "}"
    root, path = _project(tmp_path, text)
    home = tmp_path / "home"
    report = trust_report(root, home)
    assert report.error and "too large to show" in report.error and str(SHOWN_BYTES) in report.error
    assert report.files[0].text == ""
    with pytest.raises(TandemError) as err:
        grant_trust(root, home)
    assert "too large to show" in err.value.message
    # As untrusted data it still applies (it is under the settings limit).
    assert resolve(root, home, tmp_path / "user.json").settings.auto_compact is False


def test_a_file_rewritten_in_place_with_its_stamp_put_back(tmp_path: Path) -> None:
    hostile = json.dumps({"acp_agents": {"claude": {"command": ["/bin/evil-agent"]}}})
    benign = json.dumps({"acp_agents": {"claude": {"command": ["/bin/good-agent"]}}})
    assert len(hostile) == len(benign)
    root, path = _project(tmp_path, hostile)
    home, user = tmp_path / "home", tmp_path / "user.json"
    before = os.stat(path)
    read_layer(path)  # a running backend has parsed the hostile content
    shown_hostile = trust_report(root, home)
    time.sleep(0.05)  # past the kernel's coarse timestamp tick, so ctime moves
    with open(path, "r+b") as f:
        f.write(benign.encode())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        before.st_mtime_ns, before.st_size, before.st_ino)
    report = trust_report(root, home)
    assert report.files[0].text == benign
    listed = {r.key: r.value for r in report.restricted}
    assert "/bin/good-agent" in listed["acp_agents"] and "evil" not in listed["acp_agents"]
    assert report.sha256 != shown_hostile.sha256
    # The digest that went with the old content is refused ...
    with pytest.raises(TandemError) as err:
        grant_trust(root, home, shown_hostile.sha256)
    assert err.value.code == "stale"
    assert TrustStore(home).load().projects == {}
    # ... the one shown now is granted, and the trusted agent is the one shown.
    assert grant_trust(root, home, report.sha256).trusted
    resolved = resolve(root, home, user)
    assert resolved.trusted and resolved.settings.acp_agents is not None
    assert resolved.settings.acp_agents["claude"].command == ["/bin/good-agent"]


def test_trust_with_a_digest_that_no_longer_matches_is_refused(hostile: Hostile) -> None:
    shown = hostile.cli("trust", "--show", str(hostile.root))
    assert shown.returncode == 0, shown.stderr
    assert hostile.settings.read_text() in shown.stdout  # the whole file
    assert str(hostile.marker) in shown.stdout  # the agent's command, parsed
    digest = next(line.split()[1] for line in shown.stdout.splitlines()
                  if line.strip().startswith("sha256:"))
    store = TrustStore(Path(hostile.env["TANDEM_HOME"]))
    assert store.load().projects == {}  # showing grants nothing
    hostile.write({"permission_mode": "read-only"})
    refused = hostile.cli("trust", "--sha256", digest, str(hostile.root))
    assert refused.returncode == 1
    assert "changed since it was shown" in refused.stderr, refused.stderr
    assert store.load().projects == {}
    current = trust_report(hostile.root, Path(hostile.env["TANDEM_HOME"]))
    granted = hostile.cli("trust", "--sha256", current.sha256 or "", str(hostile.root))
    assert granted.returncode == 0, granted.stderr
    assert str(hostile.marker) in granted.stdout  # what was trusted is listed
    assert store.granted(hostile.root) == current.sha256
