"""``tandem ask`` through a running ``tandem serve`` of the same state root.

The turn runs in the backend (its private socket, `tandem.ask_client`), and
the terminal shows what the in-process run shows: the same stdout, stderr and
exit status. What connects to the socket is untrusted until its token: a wrong
token, a malformed request or an oversized line is refused before any session
is made. With no backend (none running, a dead one's socket left behind, a
folder that is not private) the turn runs in-process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec

from server.epc_peer import Peer
from tandem.ask_client import socket_paths

from .conftest import TOKEN, Backend, backend_log, interrupt_once_asked


def _env(fake: FakeOpenAI) -> dict[str, str]:
    return dict(os.environ, OPENAI_BASE_URL=fake.base_url + "/v1", OPENAI_API_KEY="sk-cli")


def _ask(env: dict[str, str], project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tandem.cli", "ask", "--cwd", str(project),
         "--provider", "openai:m", *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60)


def _journals() -> list[Path]:
    return sorted(Path(os.environ["TANDEM_HOME"]).glob("sessions/*/*.jsonl"))


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    script = [Reply(text="Writing.", tool_calls=[ToolCallSpec(
        name="write_file", input={"path": "b.txt", "content": "x"})]), Reply(text="Ok, not.")]
    with FakeOpenAI(script * 2) as server:
        yield server


def _same(a: subprocess.CompletedProcess[str], b: subprocess.CompletedProcess[str]) -> None:
    # The session ids differ; everything else is byte for byte the same.
    def norm(text: str) -> str:
        return "\n".join(line if not line.startswith("{") else
                         json.dumps(dict(json.loads(line), session="S"))
                         for line in text.split("\n"))
    assert (a.returncode, norm(a.stdout), a.stderr) == (b.returncode, norm(b.stdout), b.stderr)


def test_the_turn_runs_in_the_backend_and_prints_the_same(project: Path,
                                                         fake: FakeOpenAI) -> None:
    env = _env(fake)
    local = _ask(dict(env, TANDEM_ASK_LOCAL="1"), project, "--permission-mode", "ask",
                 "--json", "write b")
    backend = Backend(env)
    try:
        served = _ask(env, project, "--permission-mode", "ask", "--json", "write b")
        pid = backend.proc.pid
    finally:
        backend.stop()
    assert local.returncode == 3, local.stderr
    assert "no terminal to ask; rejected write_file" in local.stderr
    _same(local, served)
    # The backend ran it: its log has the model request, and each run made a session.
    assert f" {pid} httpx INFO HTTP Request: POST" in backend_log()
    assert len(_journals()) == 2
    # It removed its socket and token on the way out.
    assert not backend.path.exists() and not backend.token_path.exists()


def test_an_unknown_session_fails_the_same_and_leaves_nothing(project: Path,
                                                             fake: FakeOpenAI) -> None:
    env = _env(fake)
    local = _ask(dict(env, TANDEM_ASK_LOCAL="1"), project, "--session", "nosuch", "hi")
    backend = Backend(env)
    try:
        served = _ask(env, project, "--session", "nosuch", "hi")
    finally:
        backend.stop()
    assert local.returncode == 1 and "Not a session id" in local.stderr
    _same(local, served)
    assert not _journals()


def _talk(path: Path, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        try:
            sock.sendall(data)
        except OSError:
            pass  # closed on us while sending: what an oversized line gets
        got = b""
        try:
            while chunk := sock.recv(65536):
                got += chunk
        except ConnectionResetError:
            pass  # closed with our bytes unread
        return got


def test_a_peer_without_the_token_is_refused_before_any_session(project: Path,
                                                               fake: FakeOpenAI) -> None:
    backend = Backend(_env(fake))
    ask = {"prompt": "hi", "cwd": str(project), "session": None, "provider": "openai:m",
           "permission_mode": None, "json": False, "tty": False}
    token = backend.token_path.read_text().strip()
    try:
        wrong = _talk(backend.path, json.dumps({"protocol": 1, "token": "guess",
                                                "ask": ask}).encode() + b"\n")
        extra = _talk(backend.path, json.dumps({"protocol": 1, "token": token,
                                                "ask": dict(ask, more=1)}).encode() + b"\n")
        typed = _talk(backend.path, json.dumps({"protocol": 1, "token": token,
                                                "ask": dict(ask, cwd=7)}).encode() + b"\n")
        huge = _talk(backend.path, b"x" * (3 << 20))
        modes = (os.stat(backend.path.parent).st_mode & 0o777,
                 os.stat(backend.token_path).st_mode & 0o777)
    finally:
        backend.stop()
    assert json.loads(wrong) == {"refused": "wrong token"}
    assert json.loads(extra) == {"refused": "malformed request"}
    assert json.loads(typed) == {"refused": "malformed request (cwd)"}
    assert huge == b""
    assert modes == (0o700, 0o600)
    assert not _journals() and not fake.api_requests("/v1/chat/completions")


def test_with_no_live_backend_the_turn_runs_here(project: Path, fake: FakeOpenAI) -> None:
    env = _env(fake)
    backend = Backend(env)
    token = backend.token_path.read_text()
    backend.stop()
    # A dead backend's socket and token left behind: nobody answers, so in-process.
    backend.path.parent.mkdir(mode=0o700, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
        stale.bind(str(backend.path))
    backend.token_path.write_text(token)
    os.chmod(backend.token_path, 0o600)
    done = _ask(env, project, "--permission-mode", "auto-edit", "--json", "write b")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["files_changed"] == ["b.txt"]
    # A socket folder others may enter is never used.
    live = Backend(env)
    try:
        os.chmod(live.path.parent, 0o755)
        done = _ask(env, project, "--permission-mode", "auto-edit", "--json", "again")
        requests_there = backend_log().count(f" {live.proc.pid} httpx INFO")
    finally:
        os.chmod(live.path.parent, 0o700)
        live.stop()
    assert done.returncode == 0, done.stderr
    assert requests_there == 0


def test_an_interrupt_cancels_the_turn_in_the_backend(project: Path) -> None:
    with FakeOpenAI([Reply(text="slow", stall=True)]) as fake:
        env = _env(fake)
        backend = Backend(env)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tandem.cli", "ask", "--cwd", str(project),
                 "--provider", "openai:m", "wait forever"], stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            interrupt_once_asked(fake, proc)
            out, err = proc.communicate(timeout=60)
            deadline = time.time() + 30
            ends: list[dict[str, object]] = []
            while not ends and time.time() < deadline:
                ends = [json.loads(line) for j in _journals()
                        for line in j.read_text().splitlines() if '"turn_end"' in line]
                time.sleep(0.1)
        finally:
            backend.stop()
    assert proc.returncode == 130, (out, err)
    assert ends and ends[-1]["outcome"] == "aborted"


def test_through_the_backend_the_process_imports_no_turn_code(project: Path) -> None:
    with FakeOpenAI([Reply(text="ok")]) as fake:
        env = _env(fake)
        backend = Backend(env)
        try:
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-m", "tandem.cli", "ask", "--cwd",
                 str(project), "--provider", "openai:m", "hi"], stdin=subprocess.DEVNULL,
                capture_output=True, text=True, env=env, timeout=60)
        finally:
            backend.stop()
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    heavy = sorted(m for m in imported if m.split(".")[0] in ("pydantic", "httpx", "anyio")
                   or m in ("tandem.ask", "tandem.app", "tandem.turns"))
    assert heavy == []


def test_a_turn_that_cannot_start_leaves_no_session_in_the_backend(project: Path) -> None:
    # No provider anywhere: the run fails before its turn, in the backend as here.
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL")}
    cmd = [sys.executable, "-m", "tandem.cli", "ask", "--cwd", str(project), "hi"]
    local = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                           env=dict(env, TANDEM_ASK_LOCAL="1"))
    backend = Backend(env)
    try:
        served = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
        left = _journals()
    finally:
        backend.stop()
    assert local.returncode == 1 and "provider" in local.stderr.lower()
    _same(local, served)
    assert left == [], "an empty session was left behind"


def test_a_start_removes_dead_backends_sockets_of_other_state_roots(fake: FakeOpenAI,
                                                                   tmp_path: Path) -> None:
    # Emacs kills its backend (`delete-process`): its socket stays. The next start
    # removes those nobody answers, once they are a minute old.
    folder = socket_paths(tmp_path)[0].parent
    folder.mkdir(mode=0o700, exist_ok=True)
    dead: dict[str, Path] = {}
    for name, age in (("ask-0000000000000old.sock", 3600), ("ask-0000000000000new.sock", 0)):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(str(folder / name))
        (folder / name).with_suffix(".token").write_text("t\n")
        then = time.time() - age
        os.utime(folder / name, (then, then))
        dead[name] = folder / name
    backend = Backend(_env(fake))
    backend.stop()
    assert not dead["ask-0000000000000old.sock"].exists()
    assert not dead["ask-0000000000000old.sock"].with_suffix(".token").exists()
    assert dead["ask-0000000000000new.sock"].exists()  # perhaps a backend just starting


def test_emacss_current_session_stays_where_it_was(project: Path, fake: FakeOpenAI,
                                                  tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _env(fake)
    backend = Backend(env)
    emacs = Peer(backend.port)
    try:
        emacs.call("hello", {"token": TOKEN})
        assert emacs.recv()[0] == "return"
        emacs.call("sessions/new", {"cwd": str(elsewhere)})
        kind, _uid, mine = emacs.recv()
        assert kind == "return", mine
        done = _ask(env, project, "--permission-mode", "auto-edit", "--json", "write b")
        uid = emacs.call("sessions/current")
        while (msg := emacs.recv())[:2] != ["return", uid]:
            pass  # the turn's events, pushed to Emacs as to any client
        current = msg[2]
    finally:
        emacs.sock.close()
        backend.stop()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["session"] != mine["id"]
    assert current["id"] == mine["id"] and current["cwd"] == str(elsewhere)
