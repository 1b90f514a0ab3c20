"""Fixtures for native provider tests: the fake servers, a recording sink, a workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

# The fake servers live in tests/fakes, importable as the package ``fakes``.


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small project folder with one file."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("hello world\n")
    return root
