"""Talking to a running agent, in a real terminal with a normal init file.

The user's settings file already names the local test server (what the first-run
setup writes), so `M-x tandem` asks nothing. Then:

- a request whose turn stops at a permission question; while it waits the user
  types a second message and sends it with C-c C-c: it is queued under the running
  turn (a visible row), the turn is not cancelled;
- C-c C-s steers the waiting turn: a row under it says the guidance waits, then
  the guidance is a row in the turn, and the model's next request in that same
  turn ends with it;
- the question is answered with the keys the screen names (point comes back to
  the composer, where it was); the file is written,
  the turn ends well and the queued message goes as the next turn, whose answer
  shows;
- C-c C-k on an idle composer cancels nothing and says so;
- with the session buffer out of sight (main.py fills the frame), a turn that
  starts waiting is heard: the echo area says so (no desktop bus here) and names
  the command that goes back, which lands on the question;
- `e` on that turn puts its request in the composer ("editing turn 3"); the
  edited text is sent after one question (a rewind before turn 3, then the new
  request): the todo file is gone and the new answer shows; `tandem-rewind-undo`
  brings the todo turn and its file back;
- `A` on a shell question keeps a rule (prefix and scope asked, defaults shown)
  in the user's settings file; the same command later runs with no question and
  its row names the rule.

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

from citizen.newuser import answer_yes, new_user, quit_emacs, shell, until, write_settings
from demo.test_demo_tmux import Pane


@pytest.fixture
def fake_server() -> Iterator[str]:
    """The scripted OpenAI-compatible server; yields its base URL (with /v1)."""
    script = Script.load({
        "default": {"text": "Nothing scripted for that.", "chunk_size": 8},
        "steps": [
            {"match": {"last_user_contains": "keep a notes file"},
             "reply": {"text": "I will write it.", "tool_calls": [{
                 "name": "write_file",
                 "input": {"path": "notes.txt", "content": "first line\n"}}]}},
            {"match": {"last_user_contains": "lowercase only"},
             "reply": {"text": "Steered: lowercase it is."}},
            {"match": {"last_user_contains": "notes.txt"},
             "reply": {"text": "Done: notes.txt is written."}},
            {"match": {"last_user_contains": "add a second line"},
             "reply": {"text": "The queued request arrived after the first turn."}},
            {"match": {"last_user_contains": "also a todo file"},
             # Slow enough that the user has left the session before it asks.
             "reply": {"text": "Writing the todo file now.", "chunk_size": 2, "delay": 0.25,
                       "tool_calls": [{
                 "name": "write_file", "input": {"path": "todo.txt", "content": "x\n"}}]}},
            {"match": {"last_user_contains": "print the marker"},
             "reply": {"text": "Printing.", "tool_calls": [{
                 "name": "shell", "input": {"command": "echo LISTED-FILES"}}]}},
            {"match": {"last_user_contains": "print the marker"},
             "reply": {"text": "Printing again.", "tool_calls": [{
                 "name": "shell", "input": {"command": "echo LISTED-FILES"}}]}},
            {"match": {"last_user_contains": "LISTED-FILES"},
             "reply": {"text": "The marker is printed."}},
            {"match": {"last_user_contains": "LISTED-FILES"},
             "reply": {"text": "The marker is printed once more."}},
            {"match": {"last_user_contains": "todo.txt"},
             "reply": {"text": "todo.txt is written."}},
        ]})
    with FakeOpenAI(script) as fake:
        yield fake.base_url + "/v1"


@pytest.fixture
def user(tmp_path: Path, fake_server: str) -> Iterator[tuple[Pane, Path]]:
    """A new user whose settings file (as the setup writes it) names the test server."""
    write_settings(tmp_path, fake_server)
    with new_user(tmp_path, "running-agent") as pane_and_tmp:
        yield pane_and_tmp


def test_a_message_queued_while_a_question_waits(user: tuple[Pane, Path]) -> None:
    pane, tmp = user
    shell(pane, "emacs -nw main.py")
    pane.wait_for(r"main\.py", timeout=60)
    pane.keys("M-x")
    pane.text("tandem")
    pane.keys("Enter")
    screen = pane.wait_for(r"chat ❯", timeout=60)
    assert "Provider" not in screen.splitlines()[-1], screen

    # The turn stops at a permission question.
    pane.text("Please keep a notes file")
    pane.keys("C-c", "C-c")
    pane.wait_for(r"\[y\] Allow once", timeout=60)

    # A second message while it waits: queued, never a cancel.
    pane.text("Then add a second line")
    pane.keys("C-c", "C-c")
    screen = pane.wait_for(r"⧗ Queued \S+ · Then add a second line", timeout=30)
    assert "aborted" not in screen and "cancelled" not in screen, screen
    assert (tmp / "project" / "notes.txt").exists() is False

    # Guidance for the running turn: taken at its next step, inside the turn.
    pane.text("Use lowercase only")
    pane.keys("C-c", "C-s")
    pane.wait_for(r"Steering turn 1: it goes at the turn.s next step", timeout=30)
    pane.wait_for(r"↪ You steered · waiting for the next step · \S+ · Use lowercase only",
                  timeout=30)  # its row until the turn takes it

    # The answer from the screen's own hint; the queue goes on after the turn.
    pane.keys("C-c", "C-q")
    pane.keys("y")
    screen = pane.wait_for(r"↪ You steered(.|\n)*Steered: lowercase it is\.", timeout=60)
    assert "▾ Turn 2" not in screen.split("Steered: lowercase")[0], screen  # still turn 1
    screen = pane.wait_for(r"queued request arrived after the first turn", timeout=60)
    assert "⧗ Queued" not in screen, screen
    assert (tmp / "project" / "notes.txt").read_text() == "first line\n"

    # C-c C-k with nothing running cancels nothing, and says so.
    pane.keys("C-c", "C-k")
    screen = pane.wait_for(r"No turn is running|No turn to cancel", timeout=15)

    # Out of sight, still heard: the question is announced and the command goes back.
    pane.text("And also a todo file")
    pane.keys("C-c", "C-c")
    pane.wait_for(r"Writing the", timeout=30)  # it streams; it has not asked yet
    pane.keys("C-x", "b")
    pane.text("main.py")
    pane.keys("Enter")
    pane.keys("C-x", "1")
    screen = pane.wait_for(r"Waits for you.*tandem-notify-visit", timeout=60)
    assert "[y] Allow once" not in screen, screen  # the session really is out of sight
    pane.keys("M-x")
    pane.text("tandem-notify-visit")
    pane.keys("Enter")
    pane.wait_for(r"\[y\] Allow once", timeout=15)
    pane.keys("C-c", "C-q")
    pane.keys("y")
    pane.wait_for(r"todo\.txt is written", timeout=60)
    until(lambda: (tmp / "project" / "todo.txt").exists(), pane.screen())

    # Edit and resend the todo request: one question, the rewind, the new request.
    pane.keys("C-p", "C-p", "C-p")  # out of the composer, into the last turn
    pane.keys("p")
    pane.keys("e")
    pane.wait_for(r"editing turn 3", timeout=15)
    pane.keys("C-a", "C-k")
    pane.text("Just say hello instead")
    pane.keys("C-c", "C-c")
    answer_yes(pane)
    screen = pane.wait_for(r"Just say hello instead(.|\n)*Nothing scripted for that", timeout=60)
    assert "todo.txt is written" not in screen, screen
    until(lambda: not (tmp / "project" / "todo.txt").exists(), screen)

    # The undo brings the todo turn back, and its file.
    pane.keys("M-x")
    pane.text("tandem-rewind-undo")
    pane.keys("Enter")
    answer_yes(pane)
    screen = pane.wait_for(r"Undid the rewind before turn 3", timeout=30)
    until(lambda: (tmp / "project" / "todo.txt").exists(), screen)
    screen = pane.wait_for(r"todo\.txt is written", timeout=15)

    # A remembered answer: A on the question keeps a rule, the next same call is not asked.
    pane.text("Please print the marker")
    pane.keys("C-c", "C-c")
    pane.wait_for(r"\[A\] Always", timeout=60)
    pane.keys("C-c", "C-q")
    pane.keys("A")
    pane.wait_for(r"Command prefix to always allow for shell \(default echo LISTED-FILES\)",
                  timeout=15)
    pane.keys("Enter")
    pane.wait_for(r"Scope \(default .*project\)", timeout=15)
    pane.keys("Enter")
    pane.wait_for(r"The marker is printed\.", timeout=60)
    rules = json.loads((tmp / "config" / "tandem" / "settings.json").read_text())
    assert [r["pattern"] for r in rules["permission_rules"]] == ["echo LISTED-FILES"], rules
    pane.text("Please print the marker again")
    pane.keys("C-c", "C-c")
    screen = pane.wait_for(r"The marker is printed once more\.", timeout=60)
    last_turn = screen.split("print the marker again")[-1]
    assert "Allow once" not in last_turn, screen
    assert re.search(r"rule: shell echo LISTED-FILES", last_turn), screen
    quit_emacs(pane)
