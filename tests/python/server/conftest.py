"""The real backend the server tests talk to: `tandem serve` in a temporary home."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .epc_peer import start_backend

TOKEN = "secret-token"
"""The token the `backend` fixture's server accepts."""


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A running ``tandem serve`` (its port in ``.port``), stopped afterwards."""
    proc = start_backend(tmp_path, TOKEN)
    yield proc
    proc.terminate()
    proc.wait(10)
