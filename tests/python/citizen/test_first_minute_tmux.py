"""A new user's first minute, in a real terminal: tmux send-keys, then capture-pane.

`emacs -Q -nw` with the package on the load path and nothing configured:
`M-x tandem` asks the setup questions (provider, base URL, key, model from
the server's `/v1/models`, permission mode), each showing its default and
its choices, the user answers them with keys,
types a first message and sees the answer stream in. The model is the
scripted fake OpenAI-compatible server of the test suite; the checks read
the screen only, as a person would.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Script

from demo.test_demo_tmux import Pane, _missing, tmux_socket

ROOT = Path(__file__).resolve().parents[3]
ANSWER = "Welcome to tandem; this first answer streamed from the local test server."


@pytest.fixture
def fake_server() -> Iterator[str]:
    """The scripted OpenAI-compatible server; yields its base URL (with /v1)."""
    script = Script.load({"default": {"text": ANSWER, "chunk_size": 4,
                                              "delay": 0.01}})
    with FakeOpenAI(script) as fake:
        yield fake.base_url + "/v1"


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    reason = _missing()
    if reason:
        print(f"SKIP test_first_minute_tmux: {reason}")
        pytest.skip(reason)
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text('print("hello")\n')
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")}
    env.update(TERM="xterm-256color", HOME=str(home), TANDEM_HOME=str(tmp_path / "state"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    emacs = f"emacs -nw -Q -L {ROOT / 'elisp'} -l tandem; sleep 30"
    p = Pane(f"tandem-first-{uuid.uuid4().hex[:8]}", tmux_socket())
    p.start(emacs, project, env, 120, 40)
    try:
        yield p
    finally:
        p.stop()
        shutil.rmtree(p.socket.parent, ignore_errors=True)


def test_a_new_users_first_minute(pane: Pane, fake_server: str, tmp_path: Path) -> None:
    pane.wait_for(r"scratch|GNU Emacs", timeout=60)
    pane.keys("M-x")
    pane.text("tandem")
    pane.keys("Enter")
    # Each prompt shows its default, and its choices before any TAB or ?.
    screen = pane.wait_for(r"Provider \(default Anthropic\):", timeout=60)
    assert "OpenAI-compatible server" in screen
    pane.text("OpenAI-c")
    pane.keys("Tab", "Enter")
    screen = pane.wait_for(r"Base URL of the server")
    assert "(default http://127.0.0.1:8080/v1)" in screen
    pane.keys("C-a", "C-k")
    pane.text(fake_server)
    pane.keys("Enter")
    # A loopback server: "no key" is the default, and the other choices are listed.
    screen = pane.wait_for(r"Where is the openai key \(default no key")
    assert "auth-source" in screen
    pane.keys("Enter")
    screen = pane.wait_for(r"Model \(default ", timeout=60)  # from the server's /v1/models
    assert "listed none" not in screen
    pane.keys("Enter")  # the first model the server listed
    pane.wait_for(r"Permission mode")
    pane.keys("Enter")  # ask
    screen = pane.wait_for(r"chat ❯", timeout=60)
    assert "openai:fake-model" in screen  # the header names the provider chosen
    pane.text("Hello, what is this?")
    pane.keys("C-c", "C-c")
    screen = pane.wait_for(r"first answer streamed", timeout=60)
    assert "Hello, what is this?" in screen
    pane.wait_for(r"✔ succeeded", timeout=30)
    pane.keys("C-x", "C-c")
    # The session went into the test's own state directory, whatever tmux
    # server ran before (a session on the user's server ran in the user's home).
    assert list((tmp_path / "state" / "sessions").rglob("*.jsonl"))
