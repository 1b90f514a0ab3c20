"""Fixtures of the remote tests: a fake agent-server on a real socket."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tandem.app import App

from .fake_server import FakeAgentServer


@pytest.fixture
def server_home(tmp_path: Path) -> Path:
    """A real folder the fake server reports as its home."""
    home = tmp_path / "server-home"
    home.mkdir()
    return home


@pytest.fixture
def fake(server_home: Path) -> Iterator[FakeAgentServer]:
    """A running fake agent-server without a session key."""
    with FakeAgentServer(str(server_home)) as srv:
        yield srv


@pytest.fixture
def keyed(server_home: Path) -> Iterator[FakeAgentServer]:
    """A running fake agent-server that requires the key ``s3cret-key``."""
    with FakeAgentServer(str(server_home), api_key="s3cret-key") as srv:
        yield srv


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    """A backend's services on a home of its own."""
    yield App(home=tmp_path / "home")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty local project (its turns run on the server)."""
    root = tmp_path / "project"
    root.mkdir()
    return root
