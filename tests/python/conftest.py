"""Shared fixtures: no test ever touches the user's real state or config."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # makes `fakes` importable


@pytest.fixture(autouse=True)
def _isolated_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path_factory.mktemp("tandem-home")
    monkeypatch.setenv("TANDEM_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio, the backend's loop."""
    return "asyncio"
