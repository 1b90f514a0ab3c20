"""A new user's first half hour, in a real terminal, with a normal init file (not -Q).

A shell in tmux (its own tmux server, its own HOME, XDG dirs and state): the
user starts `emacs -nw`, whose ~/.emacs.d/init.el loads tandem as an init
file would, and walks the seams one after the other:

- `M-x tandem` asks the setup questions, each showing its default; the
  answer streams; the header's percentages are drawn;
- the user quits, runs `tandem ask` in the shell with no flag or variable,
  and gets an answer from the same configuration;
- Emacs again: nothing is asked; a permission question is answered with
  the keys the screen names;
- a directive on a line of main.py: Discuss, its result at the code,
  Implement this; the visited file shows what was written;
- Rewind and its undo, the view never blank, the footer back;
- `=` on the turn, `k` in the review (selected), the hunk marked reverted;
- the overview: titles from the first requests, the header's counts;
- `C-h i m tandem` finds the manual; quit.

Every check reads the screen (or the files a person would open).
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Script

from citizen.newuser import answer_yes, new_user, quit_emacs, shell, until
from demo.test_demo_tmux import Pane

ANSWER = "Welcome to tandem; this answer streamed from the local test server."


@pytest.fixture
def fake_server() -> Iterator[str]:
    """The scripted OpenAI-compatible server; yields its base URL (with /v1)."""
    script = Script.load({
        "default": {"text": ANSWER, "chunk_size": 4, "delay": 0.01},
        "steps": [
            {"match": {"last_user_contains": "keep a notes file"},
             "reply": {"text": "I will write it.", "tool_calls": [{
                 "name": "write_file",
                 "input": {"path": "notes.txt", "content": "first line\nsecond line\n"}}]}},
            {"match": {"last_user_contains": "notes.txt"},
             "reply": {"text": "Done: notes.txt is written."}},
            # The directive: a discussion, then "implement this".
            {"match": {"any_contains": "make the greeting shout"},
             "reply": {"text": "Use upper case in the greeting.\nThat is all it takes."}},
            {"match": {"any_contains": "make the greeting shout"},
             "reply": {"text": "Writing it.", "tool_calls": [{
                 "name": "write_file",
                 "input": {"path": "main.py", "content": "print(\"HELLO\")\n"}}]}},
            {"match": {"last_user_contains": "main.py"},
             "reply": {"text": "main.py now shouts."}},
        ]})
    with FakeOpenAI(script) as fake:
        yield fake.base_url + "/v1"


@pytest.fixture
def user(tmp_path: Path) -> Iterator[tuple[Pane, Path]]:
    """A shell in tmux for a new user: HOME with an init file that loads tandem."""
    with new_user(tmp_path, "half-hour") as pane_and_tmp:
        yield pane_and_tmp


def test_a_new_users_first_half_hour(user: tuple[Pane, Path],
                                     fake_server: str) -> None:
    pane, tmp = user
    # First run: every question shows its default.
    shell(pane, "emacs -nw")
    pane.wait_for(r"scratch", timeout=60)
    pane.keys("M-x")
    pane.text("tandem")
    pane.keys("Enter")
    pane.wait_for(r"Provider \(default Anthropic\):", timeout=60)
    pane.text("OpenAI-c")
    pane.keys("Tab", "Enter")
    pane.wait_for(r"Base URL of the server \(with /v1\) \(default http://127\.0\.0\.1:8080/v1\)")
    pane.text(fake_server)
    pane.keys("Enter")
    pane.wait_for(r"Where is the openai key \(default no key")
    pane.keys("Enter")  # a local server: no key, the default shown
    screen = pane.wait_for(r"Model \(default fake-model\):", timeout=60)
    pane.keys("Enter")
    pane.wait_for(r"Permission mode .*\(default ask\)")
    pane.keys("Enter")
    screen = pane.wait_for(r"chat ❯", timeout=60)
    assert "openai:fake-model" in screen
    # The header's percentages are drawn, not eaten as %-constructs.
    assert "context 0% of 128.0k (compacts at 80%)" in screen, screen
    # The setup said where it saved the answers.
    assert "saved in" in screen and "settings.json" in screen, screen
    pane.text("Hello, what is this?")
    pane.keys("C-c", "C-c")
    pane.wait_for(r"answer streamed from the local", timeout=60)
    pane.wait_for(r"✔ succeeded", timeout=30)
    quit_emacs(pane)

    # The shell: the same configuration, no flag and no variable.
    pane.keys("C-l")
    shell(pane, "tandem ask 'and from the shell?'; echo exit=$?")
    screen = pane.wait_for(r"exit=\d+", timeout=90)
    assert ANSWER in screen, screen
    assert "exit=0" in screen, screen
    assert "No provider chosen" not in screen and "no API key" not in screen

    # A restart asks nothing again, and the session is there.
    pane.keys("C-l")
    shell(pane, "emacs -nw main.py")
    pane.wait_for(r"main\.py", timeout=60)
    pane.keys("M-x")
    pane.text("tandem")
    pane.keys("Enter")
    screen = pane.wait_for(r"chat ❯", timeout=60)
    assert "Provider" not in screen.splitlines()[-1]
    assert "Hello, what is this?" in screen or "and from the shell?" in screen, screen

    # A permission question, answered with the key the screen shows.
    pane.text("Please keep a notes file")
    pane.keys("C-c", "C-c")
    screen = pane.wait_for(r"write_file", timeout=60)
    screen = pane.wait_for(r"\[y\] Allow once", timeout=30)
    assert "C-c C-q goes to the question" in screen
    pane.keys("C-c", "C-q")
    pane.keys("y")
    pane.wait_for(r"notes\.txt is written", timeout=60)
    assert (tmp / "project" / "notes.txt").read_text() == "first line\nsecond line\n"

    # A directive on main.py's line: Discuss, its result at the code, Implement this.
    pane.keys("C-x", "b")
    pane.text("main.py")
    pane.keys("Enter")
    pane.wait_for(r"print\(\"hello\"\)", timeout=10)
    pane.keys("M-<")
    pane.keys("M-x")
    pane.text("tandem-directive")
    pane.keys("Enter")
    pane.wait_for(r"Directive request", timeout=10)
    pane.text("make the greeting shout")
    pane.keys("Enter")
    pane.wait_for(r"D1", timeout=30)
    pane.keys("C-c", "C-d")
    pane.wait_for(r"Discuss", timeout=10)
    pane.keys("d")
    pane.wait_for(r"D1 discuss ❯", timeout=30)  # the composer, in the directive's scope
    pane.text("How would you do it?")
    pane.keys("C-c", "C-c")
    screen = pane.wait_for(r"Use upper case in the greeting\.", timeout=60)
    # The result is at the code, with the keys of what comes next.
    screen = pane.wait_for(r"↳ Use upper case in the greeting\..*implement this", timeout=60)
    pane.keys("C-x", "b")
    pane.text("main.py")
    pane.keys("Enter")
    pane.keys("M-<")
    pane.keys("C-c", "C-d")
    pane.wait_for(r"Implement this", timeout=10)
    pane.keys("t")
    pane.wait_for(r"\[y\] Allow once", timeout=60)
    pane.keys("M-x")
    pane.text("tandem-answer")
    pane.keys("Enter")
    pane.wait_for(r"Write main\.py", timeout=10)
    pane.keys("y")
    screen = pane.wait_for(r"↳ .*1 file changed", timeout=60)
    assert (tmp / "project" / "main.py").read_text() == 'print("HELLO")\n'
    # The visited file shows what the turn wrote, not what it held before.
    screen = pane.wait_for(r'print\("HELLO"\)', timeout=10)

    # Rewind the implementation, then undo the rewind: the view is never blank.
    pane.keys("M-x")
    pane.text("tandem-rewind")
    pane.keys("Enter")
    pane.wait_for(r"Rewind before turn \(default 4\)", timeout=20)
    pane.keys("Enter")
    pane.wait_for(r"Rewind before turn 4: restore 1 file", timeout=30)
    answer_yes(pane)
    pane.wait_for(r"undo: C-c C-t u", timeout=30)
    # The session window shows the turns before 4, never a blank view.
    screen = pane.wait_for(r"[▸▾] Turn 3 ·(?!(.|\n)*[▸▾] Turn 4 ·)", timeout=15)
    assert (tmp / "project" / "main.py").read_text() == 'print("hello")\n'
    pane.keys("C-c", "C-t")
    pane.wait_for(r"Undo the latest rewind", timeout=10)
    pane.keys("u")
    answer_yes(pane)
    pane.wait_for(r"Undid the rewind before turn 4", timeout=30)
    # Turn 4 is back with its footer; the file's buffer shows what the file holds (the
    # preview's window gives way and the view redraws just after the message, under load
    # a screen later).
    screen = pane.wait_for(r'print\("HELLO"\)(.|\n)*✔ succeeded · 1 file changed', timeout=15)
    until(lambda: (tmp / "project" / "main.py").read_text() == 'print("HELLO")\n', screen)

    # Review the turn that changed a file with = on it; revert its hunk: the review follows.
    pane.keys("C-p", "C-p", "C-p", "C-p")  # out of the composer, into the transcript
    pane.keys("p")  # the start of the last turn, turn 4
    pane.keys("=")
    screen = pane.wait_for(r"\+print\(\"HELLO\"\)", timeout=30)
    pane.keys("k")  # the review buffer is selected: k reverts the hunk at point
    answer_yes(pane)
    screen = pane.wait_for(r"reverted", timeout=30)
    assert "Text is read-only" not in screen
    assert (tmp / "project" / "main.py").read_text() == 'print("hello")\n'
    pane.keys("q")
    pane.keys("M-x")
    pane.text("tandem")
    pane.keys("Enter")
    screen = pane.wait_for(r"chat ❯|D1 discuss ❯", timeout=30)

    # The overview: the session's title (its first request) and the header's counts.
    counts = re.search(r"(\d\S* in · \d\S* out)", screen)
    assert counts, screen
    pane.keys("M-x")
    pane.text("tandem-sessions-list")
    pane.keys("Enter")
    # The restart continued the project's latest session: the one `tandem ask` made.
    screen = pane.wait_for(r"Id +State +Title(.|\n)*and from the shell\?", timeout=30)
    row = next(line for line in screen.splitlines()
               if "and from the shell?" in line and " in · " in line)
    assert counts.group(1) in row, (counts.group(1), screen)
    assert "Hello, what is this?" in screen  # the first session, titled by its request
    assert "(untitled)" not in screen
    pane.keys("q")

    # The manual, where Emacs looks for it.
    pane.keys("C-h", "i")
    pane.wait_for(r"Info", timeout=30)
    pane.keys("m")
    pane.text("tandem")
    pane.keys("Enter")
    screen = pane.wait_for(r"tandem", timeout=30)
    assert "No match" not in screen
    pane.wait_for(r"Top", timeout=10)
    pane.keys("q")
    quit_emacs(pane)
    settings = json.loads((tmp / "config" / "tandem" / "settings.json").read_text())
    assert settings["default_provider"] == "openai:fake-model"
