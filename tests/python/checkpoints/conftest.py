"""Fixtures for checkpoint tests: real directories, real git, real files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cp_helpers import git, write

from tandem.checkpoints import Checkpointer


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh TANDEM_HOME."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fresh workspace root (not a git repository)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def make(home: Path) -> Callable[..., Checkpointer]:
    """Build a Checkpointer for a root under the test's home."""

    def build(root: Path, **kwargs: object) -> Checkpointer:
        return Checkpointer(home, root, **kwargs)  # type: ignore[arg-type]

    return build


@pytest.fixture
def user_repo(root: Path) -> Path:
    """ROOT as a user's git repository with two commits, a branch, a tag and staged work."""
    git(root, "init", "-q", "-b", "main")
    write(root, "src/app.py", "print('v1')\n")
    write(root, ".gitignore", "build/\n*.log\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    write(root, "src/app.py", "print('v2')\n")
    git(root, "commit", "-qam", "second")
    git(root, "branch", "feature")
    git(root, "tag", "v1")
    write(root, "staged.txt", "staged\n")
    git(root, "add", "staged.txt")
    write(root, "build/out.o", b"\x7fELF")
    write(root, "debug.log", "log\n")
    return root
