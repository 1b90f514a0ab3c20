"""``tandem ask`` on a real terminal: the permission question is asked on the pty.

The child gets a pseudo-terminal as its controlling terminal (``setsid`` and
``TIOCSCTTY``) and as stdin, as in a shell or tmux; the test reads the question
from the pty's master side and types the answer there.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec

from .conftest import Backend

QUESTION = b"Allow write_file"


def _write(path: str, content: str) -> Reply:
    return Reply(text=f"Writing {path}.", tool_calls=[ToolCallSpec(
        name="write_file", input={"path": path, "content": content})])


def _take_terminal() -> None:
    # Runs in the child after setsid (start_new_session): stdin, the pty's
    # slave side, becomes the controlling terminal, so /dev/tty is the pty.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """The master side of the pty a ``tandem ask`` child runs on."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.seen = b""

    def wait_for(self, text: bytes, timeout: float = 60) -> None:
        """Read the terminal until TEXT appeared after what was already consumed."""
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} on the terminal; it showed {self.seen!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                assert chunk, f"terminal closed before {text!r}; it showed {self.seen!r}"
                self.seen += chunk
        self.seen = self.seen[self.seen.index(text) + len(text):]

    def drain(self) -> None:
        """Read what is left on the terminal after the child ended."""
        while select.select([self.master], [], [], 0)[0]:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                return
            if not chunk:
                return
            self.seen += chunk

    def type(self, line: str) -> None:
        """Type LINE and Return."""
        os.write(self.master, line.encode() + b"\r")


def _run(project: Path, script: list[Reply], answers: list[str],
         through: str = "here") -> tuple[int, str, str, str]:
    """Run ``tandem ask`` on a pty answering ANSWERS; return code, out, err, requests.

    THROUGH ``backend``: a ``tandem serve`` of the same state root runs the turn,
    and the question comes back to this terminal over its socket.
    """
    master, slave = os.openpty()
    with FakeOpenAI(script) as fake, contextlib.ExitStack() as stack:
        env = dict(os.environ, OPENAI_BASE_URL=fake.base_url + "/v1", OPENAI_API_KEY="sk-pty")
        env.pop("TANDEM_FORCE_TTY", None)
        if through == "backend":
            stack.callback(Backend(env).stop)
        proc = subprocess.Popen(
            [sys.executable, "-m", "tandem.cli", "ask", "--cwd", str(project), "--provider",
             "openai:m", "--permission-mode", "ask", "write the files"],
            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            start_new_session=True, preexec_fn=_take_terminal)
        os.close(slave)
        terminal = Terminal(master)
        try:
            for answer in answers:
                terminal.wait_for(QUESTION)
                terminal.wait_for(b": ")
                terminal.type(answer)
            out, err = proc.communicate(timeout=60)
            terminal.drain()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(master)
        asked = terminal.seen.decode(errors="replace")
    return proc.returncode, out, err, asked


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture(params=["here", "backend"])
def through(request: pytest.FixtureRequest) -> str:
    """Where the turn runs: in the ``tandem ask`` process, or in a running backend."""
    return str(request.param)


def test_yes_allows_this_call_only(project: Path, through: str) -> None:
    script = [_write("one.txt", "1"), _write("two.txt", "2"), Reply(text="Done.")]
    code, out, err, asked = _run(project, script, ["y", "n"], through)
    assert code == 3, err  # succeeded, with a refused call
    assert "no terminal" not in err
    assert (project / "one.txt").read_text() == "1"
    assert not (project / "two.txt").exists()  # asked again, and refused


def test_always_allows_the_rest_of_the_session(project: Path, through: str) -> None:
    script = [_write("one.txt", "1"), _write("two.txt", "2"), Reply(text="Done.")]
    code, out, err, asked = _run(project, script, ["a"], through)
    assert code == 0, err
    assert (project / "one.txt").read_text() == "1"
    assert (project / "two.txt").read_text() == "2"  # not asked a second time
    assert QUESTION.decode() not in asked


def test_no_rejects(project: Path, through: str) -> None:
    code, out, err, asked = _run(project, [_write("one.txt", "1"), Reply(text="Ok.")], ["n"],
                                 through)
    assert code == 3, err  # succeeded, with a refused call
    assert "no terminal" not in err
    assert not (project / "one.txt").exists()
    assert "Ok." in out


def test_empty_answer_takes_the_default_no(project: Path, through: str) -> None:
    code, out, err, asked = _run(project, [_write("one.txt", "1"), Reply(text="Ok.")], [""],
                                 through)
    assert code == 3, err  # succeeded, with a refused call
    assert "no terminal" not in err
    assert not (project / "one.txt").exists()
