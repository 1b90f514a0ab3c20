"""Fixtures for the tool-confinement tests: a project root beside a fake home."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project folder with one ordinary file; its parent also holds ``outside/``."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("hello world\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("OUTSIDE SECRET\n")
    return project
