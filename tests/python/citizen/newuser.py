"""A new user's terminal: a shell in tmux (its own tmux server, HOME, XDG dirs and state)
whose ~/.emacs.d/init.el loads tandem as an init file would, and the moves every
scenario makes in it (type a shell line, answer a question, quit Emacs, wait for a file)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from demo.test_demo_tmux import Pane, _missing, tmux_socket

ROOT = Path(__file__).resolve().parents[3]


def shell(pane: Pane, line: str) -> None:
    """Type LINE at the shell prompt and run it."""
    pane.text(line)
    pane.keys("Enter")


@contextmanager
def new_user(tmp_path: Path, name: str) -> Iterator[tuple[Pane, Path]]:
    """A shell in tmux (pane NAME) for a new user, in TMP_PATH/project; yields it and TMP_PATH."""
    reason = _missing()
    if reason:
        print(f"SKIP {name}: {reason}")
        pytest.skip(reason)
    if not (ROOT / "doc" / "tandem.info").exists():
        subprocess.run(["make", "info"], cwd=ROOT, check=True, capture_output=True)
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text('print("hello")\n')
    home = tmp_path / "home"
    (home / ".emacs.d").mkdir(parents=True)
    (home / ".emacs.d" / "init.el").write_text(
        f";; A new user's init file: tandem from a clone.\n"
        f"(add-to-list 'load-path {json.dumps(str(ROOT / 'elisp'))})\n"
        f"(require 'tandem)\n"
        f"(setq inhibit-startup-screen t)\n")
    env = {
        # Inside tmux; screen's terminal setup sends Emacs no query whose
        # late reply (under load) would arrive as typed text.
        "HOME": str(home), "TERM": "screen-256color", "LANG": "C.UTF-8",
        "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "TANDEM_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PS1": "user$ ",
    }
    command = " ".join(["env", "-i", *(f"{k}={v}" for k, v in env.items()),
                        shutil.which("bash") or "/bin/bash", "--norc", "--noprofile"])
    pane = Pane(name, tmux_socket())
    pane.start(command, project, env, 120, 40)
    try:
        pane.wait_for(r"user\$", timeout=30)
        yield pane, tmp_path
    finally:
        pane.stop()


def write_settings(tmp_path: Path, server: str, permission_mode: str = "ask") -> None:
    """The user's settings file as the setup writes it, naming the test SERVER (with /v1)."""
    config = tmp_path / "config" / "tandem"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({
        "default_provider": "openai:fake-model", "permission_mode": permission_mode,
        "openai": {"base_url": server}}))


def until(check: Callable[[], bool], screen: str, timeout: float = 15) -> None:
    """Wait until CHECK holds (a file on disk), else fail showing SCREEN."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached after {timeout}s; the screen:\n{screen}")
        time.sleep(0.2)


def answer_yes(pane: Pane, timeout: float = 10) -> None:
    """Answer a y-or-n or yes-or-no question if one shows within TIMEOUT."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = pane.screen()
        if "(y or n)" in screen:
            pane.text("y")
            return
        if "(yes or no)" in screen:
            pane.text("yes")
            pane.keys("Enter")
            return
        time.sleep(0.2)


def quit_emacs(pane: Pane) -> None:
    """Leave Emacs with C-x C-c, answering its questions, until the shell prompt is back.

    A modified file buffer is not saved (its question answered ``n``)."""
    pane.keys("C-x", "C-c")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        screen = pane.screen()
        if "Save file " in screen and "(y, n," in screen.replace("\n", ""):
            pane.text("n")
        elif "(y or n)" in screen or "(yes or no)" in screen:
            pane.text("y" if "(y or n)" in screen else "yes")
            pane.keys("Enter")
        if screen.rstrip().endswith("user$"):
            return
        time.sleep(0.2)
    raise AssertionError(f"Emacs did not quit:\n{pane.screen()}")
