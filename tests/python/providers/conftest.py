"""Fixtures for native provider tests: the fake servers, a recording sink, a workspace."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The fake servers live in tests/fakes, importable as the package ``fakes``.
_TESTS = Path(__file__).resolve().parents[2]
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio, the backend's loop."""
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small project folder with one file."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("hello world\n")
    return root
