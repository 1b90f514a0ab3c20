"""The EPC server as a process: framing, auth, errors, concurrency, paging, events."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tandem.protocol import sexp
from tandem.protocol.base import MethodSpec, Params, TandemError
from tandem.protocol.peer import CURRENT
from tandem.protocol.sexp import Symbol
from tandem.server import framing
from tandem.server.connection import Connection

from .conftest import TOKEN
from .epc_peer import Peer


@pytest.fixture
def peer(backend: subprocess.Popen[str]) -> Iterator[Peer]:
    p = Peer(backend.port)  # type: ignore[attr-defined]
    p.call("hello", {"token": TOKEN})
    assert p.recv()[0] == "return"
    yield p
    p.close()


def test_port_is_the_first_line_and_nothing_before_it(tmp_path: Path) -> None:
    # TANDEM_TOKEN in the environment still works (the process re-executes
    # itself without it: see tests/python/security/test_secrets.py).
    env = dict(os.environ, TANDEM_HOME=str(tmp_path), TANDEM_TOKEN=TOKEN, PYTHONWARNINGS="always")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tandem.cli", "serve"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdin is not None
    first = proc.stdout.readline()
    assert first.strip().isdigit()
    proc.stdin.close()  # Emacs went away: the server exits by itself
    assert proc.wait(10) == 0
    assert proc.stderr is not None and proc.stderr.read() == b""
    assert (tmp_path / "logs" / "backend.log").exists()


@pytest.mark.parametrize("stdin", [b"", b"not json\n", b'{"secrets": {}}\n'])
def test_missing_token_refuses_to_start(tmp_path: Path, stdin: bytes) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TANDEM_TOKEN"}
    env["TANDEM_HOME"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "tandem.cli", "serve"],
        env=env,
        input=stdin,
        capture_output=True,
        timeout=30,
    )
    assert out.returncode == 2
    assert b"no token" in out.stdout


@pytest.mark.parametrize(
    "first",
    [
        ("hello", {"token": "wrong"}),
        ("hello", None),
        ("hello", {"token": ""}),
        ("ping", None),
    ],
)
def test_auth_is_required_first(backend: subprocess.Popen[str], first: tuple[str, Any]) -> None:
    p = Peer(backend.port)  # type: ignore[attr-defined]
    p.call(*first)
    reply = p.recv()
    assert reply[0] == "return-error"
    assert reply[2]["code"] == "auth"
    with pytest.raises(EOFError):
        p.recv()  # the connection is closed
    good = Peer(backend.port)  # type: ignore[attr-defined]
    good.call("hello", {"token": TOKEN})
    assert good.recv()[0] == "return"


def test_errors_are_structured_and_the_server_survives(peer: Peer) -> None:
    peer.call("nope")
    assert peer.recv()[2] == {
        "code": "no-such-method",
        "message": "No such method: nope",
        "data": None,
    }
    peer.call("debug/sleep", {"seconds": "soon"})
    err = peer.recv()[2]
    assert err["code"] == "invalid" and err["message"].startswith("debug/sleep: seconds:")
    peer.uid += 1
    peer.send([Symbol("call"), peer.uid, Symbol("ping"), [1, 2]])  # not one plist
    assert peer.recv()[2]["code"] == "invalid"
    peer.send_raw(b'(call 77 ping ("unterminated')
    reply = peer.recv()
    assert reply[0] == "epc-error" and reply[1] == 77
    peer.send_raw(b"(something 5)")
    assert peer.recv()[0] == "epc-error"
    peer.call("ping")
    assert peer.recv()[2] == "pong"


def test_garbage_header_closes_only_that_connection(backend: subprocess.Popen[str]) -> None:
    p = Peer(backend.port)  # type: ignore[attr-defined]
    p.sock.sendall(b"zzzzzz(call 1 ping nil)")
    with pytest.raises(EOFError):
        p.recv()
    good = Peer(backend.port)  # type: ignore[attr-defined]
    good.call("hello", {"token": TOKEN})
    assert good.recv()[0] == "return"


def test_sixteen_concurrent_large_replies_do_not_interleave(peer: Peer) -> None:
    size = 2 * 1024 * 1024
    uids = {peer.call("debug/big", {"size": size + i}): size + i for i in range(16)}
    seen = {}
    for _ in range(16):
        kind, uid, value = peer.recv()
        assert kind == "return"
        seen[uid] = value
    assert set(seen) == set(uids)
    for uid, value in seen.items():
        assert len(value) == uids[uid]
        assert value.startswith("0123456789abcdef")


def test_large_reply_is_paged_and_no_frame_exceeds_the_limit(peer: Peer) -> None:
    size = 20 * 1024 * 1024
    peer.call("debug/big", {"size": size})
    marker = peer.recv()[2]
    assert set(marker) == {"tandem_paged", "chars", "pages"}
    text = []
    for index in range(marker["pages"]):
        peer.call("page", {"handle": marker["tandem_paged"], "index": index})
        length = int(peer._read(6), 16)
        assert length <= framing.MAX_FRAME
        text.append(sexp.loads(peer._read(length).decode())[2])
    assert sexp.loads("".join(text)) == ("0123456789abcdef" * (size // 16 + 1))[:size]
    peer.call("page", {"handle": marker["tandem_paged"], "index": 0})
    assert peer.recv()[2]["code"] == "not-found"  # released after the last page


def test_events_are_batched_numbered_and_merged(peer: Peer) -> None:
    peer.call("debug/emit", {"session": "s", "count": 3000, "text": "ab"})
    events: list[dict[str, Any]] = []
    got_reply = False
    batches = 0
    while not got_reply or sum(len(e["text"]) for e in events) < 6000:
        msg = peer.recv()
        if msg[0] == "call":
            assert msg[2] == "tandem--events"
            batches += 1
            events.extend(msg[3][0])
            peer.send([Symbol("return"), msg[1], None])
        elif msg[0] == "return":
            got_reply = True
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len(events) < 3000 and batches < 100


def test_stdin_eof_stops_the_server(backend: subprocess.Popen[str]) -> None:
    assert backend.stdin is not None
    backend.stdin.close()
    assert backend.wait(10) == 0


# In-process: handlers that misbehave, with a method table of our own.


class AnyParams(Params):
    value: Any = None


async def _unserialisable(app: Any, p: AnyParams) -> Any:
    return {"x": object()}


async def _raises(app: Any, p: AnyParams) -> Any:
    raise RuntimeError("boom")


async def _refuses(app: Any, p: AnyParams) -> Any:
    raise TandemError("busy", "A turn is in flight", {"turn": 3})


async def _calls_back(app: Any, p: AnyParams) -> Any:
    return await CURRENT.get().call("echo", p.value)


async def _in_process_calls(calls: list[tuple[str, Any]]) -> list[Any]:
    methods = {
        s.name: s
        for s in [
            MethodSpec("hello", AnyParams, _refuses, ""),
            MethodSpec("unserialisable", AnyParams, _unserialisable, ""),
            MethodSpec("raises", AnyParams, _raises, ""),
            MethodSpec("refuses", AnyParams, _refuses, ""),
            MethodSpec("calls-back", AnyParams, _calls_back, ""),
        ]
    }
    methods["hello"] = MethodSpec("hello", AnyParams, lambda a, p: asyncio.sleep(0, "hi"), "")

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await Connection(r, w, methods, None, "t").serve()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    replies = []
    for uid, (name, params) in enumerate([("hello", {"token": "t"}), *calls], 1):
        writer.write(framing.encode_frame([Symbol("call"), uid, Symbol(name), [params]]))
        while True:
            msg = await framing.read_frame(reader)
            if msg[0] == "call":  # the handler calls back into "Emacs": answer it
                writer.write(framing.encode_frame([Symbol("return"), msg[1], ["echoed", *msg[3]]]))
                continue
            replies.append(msg)
            break
    writer.close()
    server.close()
    return replies[1:]


def test_misbehaving_handlers_get_error_replies_never_silence() -> None:
    replies = asyncio.run(
        _in_process_calls(
            [("unserialisable", {}), ("raises", {}), ("refuses", {}), ("calls-back", {"value": 7})]
        )
    )
    assert replies[0][0] == "return-error" and replies[0][2]["code"] == "internal"
    assert "not serialisable" in replies[0][2]["message"]
    assert replies[1][2] == {
        "code": "internal",
        "message": "raises: RuntimeError: boom",
        "data": None,
    }
    assert replies[2][2] == {"code": "busy", "message": "A turn is in flight", "data": {"turn": 3}}
    assert replies[3] == ["return", 5, ["echoed", 7]]
