"""Fixtures of the rewind tests: a git project, an App, a fake OpenAI server."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tandem.app import App
from tandem.events import RecordingSink


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository with two committed files."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "keep.txt").write_text("kept\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
                   cwd=root, check=True)
    return root


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    """A backend state with recorded events."""
    yield App(home=tmp_path / "home", events=RecordingSink())


