"""The transport before ``hello``: hostile peers are answered or closed, never crash it.

Every case runs against the real ``tandem serve`` process while a
well-behaved client, authenticated first, keeps working; the backend's log
must hold no traceback afterwards (no exception reached the catch-all).
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tandem.protocol.sexp import Symbol

from .epc_peer import Peer, start_backend

TOKEN = "secret-token"
DEADLINE = 1.5
CAP = 16


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("preauth")


@pytest.fixture(scope="module")
def backend(home: Path) -> Iterator[subprocess.Popen[str]]:
    proc = start_backend(
        home, TOKEN, env={"TANDEM_HELLO_DEADLINE": str(DEADLINE)}, nofile=1024
    )
    yield proc
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def good(backend: subprocess.Popen[str]) -> Iterator[Peer]:
    p = Peer(backend.port)  # type: ignore[attr-defined]
    p.call("hello", {"token": TOKEN})
    assert p.recv()[0] == "return"
    yield p
    p.close()


def _alive(backend: subprocess.Popen[str], good: Peer) -> None:
    assert backend.poll() is None
    uid = good.call("ping")
    assert good.recv() == [Symbol("return"), uid, "pong"]


def _no_traceback(home: Path) -> None:
    log = (home / "logs" / "backend.log").read_text(encoding="utf-8")
    assert "Traceback" not in log, log[-3000:]


def _frame(payload: bytes) -> bytes:
    return b"%06x" % len(payload) + payload


HOSTILE: dict[str, bytes] = {
    "negative header": b"-00001(call 1 hello nil)",
    "non-hex header": b"zzzzzz(call 1 hello nil)",
    "0x header": b"0x0010" + b"(call 1 ping nil)",
    "spaced header": b" 0001a(call 1 hello nil)",
    "5000-digit integer": _frame(b"(call 1 hello ((:token " + b"1" * 5000 + b")))"),
    "5000-digit uid": _frame(b"(call " + b"1" * 5000 + b" hello nil)"),
    "bad \\U escape": _frame(b'(call 1 hello ((:token "\\UFFFFFFFF")))'),
    "bad \\x escape": _frame(b'(call 1 hello ((:token "\\x' + b"f" * 5000 + b'")))'),
    "short \\u escape": _frame(b'(call 1 hello ((:token "\\u12")))'),
    "100k-deep list": _frame(b"(" * 100_000 + b")" * 100_000),
    "30k-deep list": _frame(b"(call 1 hello " + b"(" * 30_000 + b")" * 30_000 + b")"),
    "non-ASCII token": _frame('(call 1 hello ((:token "é日本")))'.encode()),
    "methods before hello": _frame(b"(methods 1)"),
    "unknown kind": _frame(b"(something 5)"),
    "return before hello": _frame(b"(return 1 nil)"),
    "not a list": _frame(b"42"),
    "unreadable": _frame(b'(call 1 hello ("unterminated'),
    "invalid UTF-8": _frame(b"(call 1 hello ((:token \"\xff\xfe\")))"),
    "call without a name": _frame(b"(call 1)"),
    "call named by a list": _frame(b"(call 1 (a b) nil)"),
    "uid not an integer": _frame(b"(call x hello nil)"),
    "frame over the pre-auth cap": b"%06x" % (65 * 1024) + b"(" * (65 * 1024),
    "truncated header": b"00",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_input_before_hello_is_answered_or_closed(
    name: str, backend: subprocess.Popen[str], good: Peer, home: Path
) -> None:
    p = Peer(backend.port)  # type: ignore[attr-defined]
    try:
        p.sock.sendall(HOSTILE[name])
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused while still sending: closed, as it should be
    if name == "truncated header":
        p.sock.shutdown(socket.SHUT_WR)
    replies = p.outcome()
    for reply in replies:  # whatever came back is an error, never a result
        assert reply[0] in ("epc-error", "return-error"), reply
    p.close()
    _alive(backend, good)
    _no_traceback(home)


def test_sixteen_mb_frame_is_refused_from_its_header(
    backend: subprocess.Popen[str], good: Peer, home: Path
) -> None:
    def peak_kb() -> int:
        status = Path(f"/proc/{backend.pid}/status").read_text()
        return next(int(line.split()[1]) for line in status.splitlines()
                    if line.startswith("VmHWM"))

    before = peak_kb()
    p = Peer(backend.port)  # type: ignore[attr-defined]
    body = b"(call 1 hello ((:token \"" + b"a" * (0xFFFFFF - 40) + b"\")))"
    try:
        p.sock.sendall(b"%06x" % len(body) + body)
    except (BrokenPipeError, ConnectionResetError):
        pass
    p.outcome()
    p.close()
    _alive(backend, good)
    grown_mb = (peak_kb() - before) / 1024
    assert grown_mb < 50, f"peak RSS grew {grown_mb:.1f} MB"
    _no_traceback(home)


def test_wrong_token_hello_after_auth_closes(backend: subprocess.Popen[str], good: Peer) -> None:
    p = Peer(backend.port)  # type: ignore[attr-defined]
    p.call("hello", {"token": TOKEN})
    assert p.recv()[0] == "return"
    p.call("hello", {"token": TOKEN})  # the right token again is fine
    assert p.recv()[0] == "return"
    p.call("hello", {"token": "guess"})
    replies = p.outcome()
    assert [r[2]["code"] for r in replies] == ["auth"]
    _alive(backend, good)


def test_methods_are_listed_only_after_auth(backend: subprocess.Popen[str], good: Peer) -> None:
    good.uid += 1
    good.send([Symbol("methods"), good.uid])
    kind, uid, methods = good.recv()
    assert kind == "return" and uid == good.uid
    assert Symbol("ping") in [m[0] for m in methods]


def test_silent_connection_is_closed_at_the_deadline(
    backend: subprocess.Popen[str], good: Peer
) -> None:
    p = Peer(backend.port)  # type: ignore[attr-defined]
    start = time.monotonic()
    assert p.outcome(timeout=DEADLINE + 10) == []
    assert DEADLINE - 0.2 <= time.monotonic() - start < DEADLINE + 8
    _alive(backend, good)


def test_unauthenticated_connections_are_capped_by_dropping_the_oldest(
    backend: subprocess.Popen[str], good: Peer
) -> None:
    idle = [Peer(backend.port) for _ in range(CAP)]  # type: ignore[attr-defined]
    try:
        time.sleep(0.3)  # let the server accept them all
        extra = Peer(backend.port)  # type: ignore[attr-defined]
        start = time.monotonic()
        assert idle[0].outcome(timeout=DEADLINE / 2) == []  # closed at once, not at the deadline
        assert time.monotonic() - start < DEADLINE / 2
        for p in idle[1:]:  # the others still wait for their hello
            p.sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                p.sock.recv(1)
        extra.call("hello", {"token": TOKEN})
        assert extra.recv()[0] == "return"
        extra.close()
        _alive(backend, good)  # an authenticated client holds no slot and is never dropped
    finally:
        for p in idle:
            p.close()


def test_1100_idle_connections_do_not_stop_the_real_client(
    backend: subprocess.Popen[str], good: Peer
) -> None:
    """The backend runs with 1024 descriptors, as under a desktop session."""
    idle: list[socket.socket] = []
    try:
        for _ in range(1100):
            try:
                idle.append(socket.create_connection(("127.0.0.1", backend.port), timeout=5))  # type: ignore[attr-defined]
            except OSError:
                pass  # refused by a full backlog: the attack's problem, not ours
        for _ in range(20):
            _alive(backend, good)
        uid = good.call("debug/big", {"size": 100_000})
        assert len(good.recv()[2]) == 100_000 and uid == good.uid
        good.call("doctor")  # opens files: needs free descriptors
        assert good.recv()[0] == "return"
    finally:
        for s in idle:
            s.close()
    late = Peer(backend.port)  # type: ignore[attr-defined]
    late.call("hello", {"token": TOKEN})
    assert late.recv()[0] == "return"
    late.close()
