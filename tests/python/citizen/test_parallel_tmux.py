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


GOOD = 'print("hello, good")\n'
BAD = 'print("hello, bad")\n'


@pytest.fixture
def two_models() -> Iterator[str]:
    """A server whose two models answer the same request differently; yields its URL."""
    def step(model: str, content: str, text: str) -> dict[str, object]:
        return {"match": {"model_contains": model, "last_user_contains": "greet better"},
                "reply": {"text": text, "tool_calls": [{
                    "name": "write_file", "input": {"path": "main.py", "content": content}}]}}
    script = Script.load({
        "default": {"text": "Done with main.py.", "chunk_size": 8},
        "steps": [step("model-one", GOOD, "Made it good."),
                  step("model-two", BAD, "Made it bad.")]})
    with FakeOpenAI(script) as fake:
        yield fake.base_url + "/v1"


def test_best_of_two_compared_and_one_landed(tmp_path: Path, two_models: str) -> None:
    """M-x tandem-best-of with 2 results: the compare view, each test's outcome, `l' lands.

    The test command is the user's own setting (init.el), keyed by the project."""
    write_settings(tmp_path, two_models, "auto-edit")
    with new_user(tmp_path, "bestof") as (pane, tmp):
        project = tmp / "project"
        for args in (["init", "-q"], ["add", "main.py"],
                     ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
            subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
        init = tmp / "home" / ".emacs.d" / "init.el"
        init.write_text(init.read_text() + (
            f"(setq tandem-test-commands '((\"{project}\" . "
            "\"grep -q good main.py && echo ok || { echo nope; exit 4; }\")))\n"))
        shell(pane, "emacs -nw main.py")
        pane.wait_for(r"main\.py", timeout=60)
        pane.keys("M-x")
        pane.text("tandem-best-of")
        pane.keys("Enter")
        pane.wait_for(r"How many results", timeout=30)
        pane.keys("C-a", "C-k")
        pane.text("2")
        pane.keys("Enter")
        for n, model in ((1, "model-one"), (2, "model-two")):
            pane.wait_for(rf"Result {n} of 2: provider \[mode\]", timeout=30)
            pane.text(f"openai:{model}")
            pane.keys("Enter")
        pane.wait_for(r"Request for every result", timeout=30)
        pane.text("Please greet better")
        pane.keys("Enter")
        screen = pane.wait_for(r"failed \(4\)", timeout=90)
        screen = pane.wait_for(r"passed", timeout=30)
        assert "openai:model-one" in screen and "openai:model-two" in screen, screen
        assert "Made it good." in screen and "Made it bad." in screen, screen
        assert (project / "main.py").read_text() == 'print("hello")\n'
        # The first row is the first result: l opens its landing review, RET lands it.
        pane.keys("M-<")
        pane.text("l")
        pane.wait_for(r'\+print\("hello, good"\)', timeout=30)
        pane.keys("Enter")
        pane.wait_for(r"Remove worktree (.|\n)*\(y or n\)", timeout=30)
        pane.text("n")
        until(lambda: (project / "main.py").read_text() == GOOD, pane.screen())
        quit_emacs(pane)
