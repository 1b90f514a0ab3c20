"""Shared fixtures: no test ever touches the user's real state or config.

Each test gets a HOME, XDG directories and TANDEM_HOME of its own. The
programs ``make test-deps`` installed (the Claude ACP adapter, the MCP
reference server, the agent-server's venv) stay reachable through
``TANDEM_TEST_CACHE``, read from the real environment once, before any test.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))  # makes `fakes` importable

import npm_cache  # noqa: E402

os.environ[npm_cache.CACHE_ENV] = str(npm_cache.test_cache())

USER_DIRS = (("HOME", "home"), ("XDG_CONFIG_HOME", "config"), ("XDG_STATE_HOME", "state"),
             ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache"))
"""The variables that name a user's directories, and the folder each gets per test."""


@pytest.fixture(autouse=True)
def _isolated_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path_factory.mktemp("user")
    for var, name in USER_DIRS:
        (user / name).mkdir()
        monkeypatch.setenv(var, str(user / name))
    monkeypatch.setenv("TANDEM_HOME", str(tmp_path_factory.mktemp("tandem-home")))
    # The private folder of backend sockets (`tandem ask` finds a running backend there).
    (user / "run").mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(user / "run"))


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio, the backend's loop."""
    return "asyncio"
