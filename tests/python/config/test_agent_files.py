"""The trust report and grant cover an agent's project configuration files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tandem.config.grants import grant_trust, trust_report
from tandem.config.layers import resolve
from tandem.protocol.base import TandemError
from tandem.protocol.settings import SHOWN_BYTES


def _project(tmp_path: Path) -> Path:
    root = (tmp_path / "clone").resolve()
    (root / ".claude").mkdir(parents=True)
    return root


def test_agent_files_alone_are_shown_granted_and_lapse(tmp_path: Path) -> None:
    root, home = _project(tmp_path), tmp_path / "home"
    settings = root / ".claude" / "settings.json"
    settings.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": "http://planted"}}))
    (root / ".mcp.json").write_text("{}")
    report = trust_report(root, home)
    assert report.exists and not report.trusted and report.error is None
    shown = {f.path: f.text for f in report.files if f.exists}
    assert shown == {str(settings): settings.read_text(), str(root / ".mcp.json"): "{}"}
    assert not resolve(root, home).trusted
    grant_trust(root, home, report.sha256)
    assert resolve(root, home).trusted
    settings.write_text(settings.read_text() + " ")
    again = resolve(root, home)
    assert not again.trusted and again.changed


def test_a_grant_does_not_cover_an_agent_file_that_appears_later(tmp_path: Path) -> None:
    root, home = _project(tmp_path), tmp_path / "home"
    (root / ".tandem").mkdir()
    data = json.dumps({"permission_mode": "read-only"}).encode()
    (root / ".tandem" / "settings.json").write_bytes(data)
    grant_trust(root, home)
    assert resolve(root, home).trusted
    (root / ".claude" / "settings.local.json").write_text("{}")
    assert not resolve(root, home).trusted  # the grant did not cover the agent's file


def test_an_agent_file_that_is_a_fifo_or_too_large_cannot_be_trusted(tmp_path: Path) -> None:
    root, home = _project(tmp_path), tmp_path / "home"
    fifo = root / ".claude" / "settings.json"
    os.mkfifo(fifo)
    report = trust_report(root, home)  # never blocks on the FIFO
    assert report.error and "not a regular file" in report.error
    with pytest.raises(TandemError):
        grant_trust(root, home, report.sha256)
    fifo.unlink()
    (root / ".mcp.json").write_bytes(b" " * (SHOWN_BYTES + 1))
    report = trust_report(root, home)
    assert report.error and "too large to show whole" in report.error
    with pytest.raises(TandemError):
        grant_trust(root, home, report.sha256)


def test_doctor_names_the_agent_files_left_unread(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from tandem import doctor

    root = _project(tmp_path)
    (root / ".mcp.json").write_text("{}")
    monkeypatch.setenv("TANDEM_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(root)
    check = doctor._project_trust()
    assert not check.ok and str(root / ".mcp.json") in check.detail
    assert f"`tandem trust {root}`" in check.detail
