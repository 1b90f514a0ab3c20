"""Fixtures for workspace tests: a project, an App with a fake OpenAI model, helpers."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small project folder."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("hello world\n")
    (root / "notes.md").write_text("# Notes\nShout politely.\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def greet():\n    return 'hi'\n\n\ndef other():\n"
                                         "    return 1\n")
    return root


@pytest.fixture
async def model(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Start a fake OpenAI server playing a script function; yields a starter."""
    from fakes.openai_server import FakeOpenAI
    from fakes.script import Script

    started: list[Any] = []

    def start(fn: Callable[[dict[str, Any]], Any]) -> Any:
        fake = FakeOpenAI(Script.of(fn)).start()
        started.append(fake)
        return fake

    yield start
    for fake in started:
        fake.stop()
