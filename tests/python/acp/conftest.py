"""Fixtures of the ACP provider tests: ``tests/`` on sys.path for the fakes
and the adapter installer."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty project folder: the workspace root of the turns."""
    path = tmp_path / "project"
    path.mkdir()
    return path
