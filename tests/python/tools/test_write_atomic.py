"""``write_atomic``: a new file follows the user's umask, an existing one keeps its mode, and
a temp name the workspace planted (a symlink out of the project) is never written through."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tandem.tools.edit import write_atomic


@pytest.fixture
def umask_077() -> Iterator[None]:
    """The process umask is 077 for the test, restored after."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_new_file_follows_the_umask(tmp_path: Path, umask_077: None) -> None:
    path = tmp_path / "new.txt"
    write_atomic(path, "hello\n")
    assert path.read_text() == "hello\n"
    assert _mode(path) == 0o600


def test_an_existing_file_keeps_its_mode(tmp_path: Path, umask_077: None) -> None:
    path = tmp_path / "run.sh"
    path.write_text("old\n")
    path.chmod(0o755)
    write_atomic(path, "new\n")
    assert path.read_text() == "new\n" and _mode(path) == 0o755


def test_a_planted_temp_symlink_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's file\n")
    project = tmp_path / "project"
    project.mkdir()
    # The temp name is predictable (the pid): a hostile workspace can plant it.
    planted = project / f".notes.txt.tandem-{os.getpid()}.tmp"
    planted.symlink_to(outside)
    write_atomic(project / "notes.txt", "written\n")
    assert outside.read_text() == "the user's file\n"
    target = project / "notes.txt"
    assert not target.is_symlink() and target.read_text() == "written\n"
    assert not planted.exists() and not planted.is_symlink()
