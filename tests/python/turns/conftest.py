"""Fixtures of the turn tests: a small project for ``tandem ask``."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder holding ``a.txt`` ("old")."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("old\n")
    return root


def interrupt_once_asked(fake: FakeOpenAI, proc: subprocess.Popen[str]) -> None:
    """C-c to PROC once its turn's model request reached FAKE (it stalls there)."""
    deadline = time.time() + 30
    while not fake.api_requests("/v1/chat/completions") and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
