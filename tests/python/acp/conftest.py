"""Fixtures of the ACP provider tests: ``tests/`` on sys.path for the fakes
and the adapter installer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from acp_adapter import AdapterUnavailable, ensure_adapter


@pytest.fixture(scope="module")
def claude_adapter() -> Path:
    """The pinned Claude Code ACP adapter; the test skips, saying why, without it."""
    try:
        return ensure_adapter()
    except AdapterUnavailable as exc:
        print(f"\nskipping a Claude ACP integration test: {exc}", file=sys.stderr)
        pytest.skip(f"Claude Code ACP adapter unavailable: {exc}")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty project folder: the workspace root of the turns."""
    path = tmp_path / "project"
    path.mkdir()
    return path
