"""Fixtures of the compaction tests: a project, an App, user settings, a session."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tandem.app import App
from tandem.events import RecordingSink


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with one file."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    return root


@pytest.fixture
def app(tmp_path: Path) -> App:
    """A backend state with recorded events."""
    return App(home=tmp_path / "home", events=RecordingSink())


def write_settings(settings: dict[str, Any]) -> None:
    """Write the user settings file (XDG_CONFIG_HOME is a temp dir per test)."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "tandem" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings))


def file_hash(path: Path) -> str:
    """SHA-256 of the file at PATH."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_hash(root: Path) -> dict[str, str]:
    """SHA-256 of every file under ROOT, by relative path."""
    return {str(p.relative_to(root)): file_hash(p) for p in sorted(root.rglob("*"))
            if p.is_file()}
