"""Fixtures of the turn tests: a small project for ``tandem ask``, a running backend."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI

from tandem.ask_client import socket_paths

TOKEN = "ask-backend-test"


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


def backend_log() -> str:
    """The backend log of this test's state root (empty when none was written)."""
    log = Path(os.environ["TANDEM_HOME"]) / "logs" / "backend.log"
    return log.read_text() if log.exists() else ""


class Backend:
    """A ``tandem serve`` started with ENV, its ``tandem ask`` socket up."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tandem.cli", "serve"], env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"token": TOKEN}) + "\n")
        self.proc.stdin.flush()
        self.port = int(self.proc.stdout.readline())
        """Its EPC port (the one Emacs connects to)."""
        self.path, self.token_path = socket_paths(Path(os.environ["TANDEM_HOME"]))
        deadline = time.monotonic() + 60
        while not self.token_path.exists():
            assert time.monotonic() < deadline and self.proc.poll() is None, backend_log()
            time.sleep(0.02)

    def stop(self) -> None:
        """Close its stdin, as Emacs going away does, and wait for it."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)
