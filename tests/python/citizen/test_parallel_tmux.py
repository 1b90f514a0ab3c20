"""A parallel session, from a real terminal with a normal init file.

The project is a git repository with one commit. The user:

- runs `M-x tandem-parallel`, names it A: the new session's buffer opens (its
  tree is a worktree beside the project);
- asks it to change main.py: the worktree's file changes, the project's does not;
- runs `M-x tandem-land`: the change shows as a diff; RET takes everything, and
  the question that follows offers to remove the worktree and branch tandem/A,
  answered yes;
- the project's main.py has the change, the worktree and the branch are gone.

Every check reads the screen or the files a person would open.
"""
from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Script

from citizen.newuser import new_user, quit_emacs, shell, until, write_settings
from demo.test_demo_tmux import Pane

CHANGED = 'print("hello from A")\n'


@pytest.fixture
def fake_server() -> Iterator[str]:
    """The scripted OpenAI-compatible server; yields its base URL (with /v1)."""
    script = Script.load({
        "default": {"text": "Nothing scripted for that.", "chunk_size": 8},
        "steps": [
            {"match": {"last_user_contains": "say hello from A"},
             "reply": {"text": "Changing it.", "tool_calls": [{
                 "name": "write_file", "input": {"path": "main.py", "content": CHANGED}}]}},
            {"match": {"last_user_contains": "main.py"},
             "reply": {"text": "main.py now says hello from A."}},
        ]})
    with FakeOpenAI(script) as fake:
        yield fake.base_url + "/v1"


@pytest.fixture
def user(tmp_path: Path, fake_server: str) -> Iterator[tuple[Pane, Path]]:
    """A new user whose settings name the test server, in a committed git project."""
    write_settings(tmp_path, fake_server, "auto-edit")
    with new_user(tmp_path, "parallel") as pane_and_tmp:
        project = tmp_path / "project"
        for args in (["init", "-q"], ["add", "main.py"],
                     ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
            subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
        yield pane_and_tmp


def test_a_parallel_session_landed_and_removed(user: tuple[Pane, Path]) -> None:
    pane, tmp = user
    project = tmp / "project"
    tree = tmp / "project.tandem-worktrees" / "A"
    shell(pane, "emacs -nw main.py")
    pane.wait_for(r"main\.py", timeout=60)
    pane.keys("M-x")
    pane.text("tandem-parallel")
    pane.keys("Enter")
    pane.wait_for(r"Parallel session name", timeout=30)
    pane.text("A")
    pane.keys("Enter")
    pane.wait_for(r"chat ❯", timeout=60)
    until(lambda: (tree / "main.py").exists(), pane.screen())

    pane.text("Please say hello from A")
    pane.keys("C-c", "C-c")
    screen = pane.wait_for(r"main\.py now says hello from A", timeout=60)
    until(lambda: (tree / "main.py").read_text() == CHANGED, screen)
    assert (project / "main.py").read_text() == 'print("hello")\n'

    pane.keys("M-x")
    pane.text("tandem-land")
    pane.keys("Enter")
    screen = pane.wait_for(r'\+print\("hello from A"\)', timeout=30)
    assert "RET everything shown" in screen, screen
    pane.keys("Enter")
    pane.wait_for(r"Remove worktree (.|\n)*journal is kept\)\? \(y or n\)", timeout=30)
    pane.text("y")
    pane.wait_for(r"removed worktree", timeout=30)
    until(lambda: (project / "main.py").read_text() == CHANGED, pane.screen())
    until(lambda: not tree.exists(), pane.screen())
    branches = subprocess.run(["git", "branch", "--list", "tandem/*"], cwd=project,
                              check=True, capture_output=True, text=True).stdout
    assert branches == ""
    quit_emacs(pane)
