"""Idle connections that never say ``hello`` cannot lock the real client out.

The backend runs with its default limits (what Emacs gets: 16 slots before
``hello``, a 10 s deadline) and 1024 descriptors, as under a desktop session.
When the slots are full the oldest waiting connection is dropped for the
newcomer, so a client that says ``hello`` at once is answered at once.
"""

from __future__ import annotations

import resource
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tandem.protocol.sexp import Symbol
from tandem.server.limits import Limits

from .epc_peer import Peer, start_backend

TOKEN = "secret-token"
IDLE = 300
TRIES = 5


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[str]]:
    home = tmp_path_factory.mktemp("eviction")
    proc = start_backend(home, TOKEN, nofile=1024)
    yield proc
    proc.terminate()
    proc.wait(10)


def _descriptors_for(count: int) -> None:
    """Raise this process's soft descriptor limit so it can hold COUNT idle sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = count + 200  # pytest, the backend's pipes, the client
    if soft >= need:
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"this test needs {need} open descriptors; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def _flood(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]


def _hello_and_ping(port: int) -> float:
    """Seconds from connecting to the ``ping`` answer of a fresh client."""
    start = time.perf_counter()
    peer = Peer(port)
    try:
        peer.call("hello", {"token": TOKEN})
        assert peer.recv()[0] == "return"
        uid = peer.call("ping")
        assert peer.recv() == [Symbol("return"), uid, "pong"]
        return time.perf_counter() - start
    finally:
        peer.close()


def test_a_real_client_is_answered_at_once_past_300_idle_connections(
    backend: subprocess.Popen[str],
) -> None:
    _descriptors_for(IDLE)
    port = backend.port  # type: ignore[attr-defined]
    first = Peer(port)  # authenticated before the flood: never dropped for it
    first.call("hello", {"token": TOKEN})
    assert first.recv()[0] == "return"
    times = []
    for _ in range(TRIES):
        idle = _flood(port, IDLE)
        try:
            time.sleep(0.3)  # let the server accept them all
            try:
                times.append(_hello_and_ping(port))
            except (EOFError, ConnectionError) as e:
                pytest.fail(f"the real client was refused with {IDLE} idle connections open: {e!r}")
        finally:
            for s in idle:
                s.close()
    shown = [f"{t * 1000:.0f} ms" for t in times]
    print("hello+ping past", IDLE, "idle connections:", shown)
    assert statistics.median(times) < 0.1, shown
    uid = first.call("ping")
    assert first.recv() == [Symbol("return"), uid, "pong"]
    first.close()
    assert backend.poll() is None


def test_the_backend_holds_no_more_descriptors_than_its_slots(
    backend: subprocess.Popen[str],
) -> None:
    _descriptors_for(IDLE)
    port = backend.port  # type: ignore[attr-defined]
    before = len(list(Path(f"/proc/{backend.pid}/fd").iterdir()))
    idle = _flood(port, IDLE)
    try:
        time.sleep(0.5)
        during = len(list(Path(f"/proc/{backend.pid}/fd").iterdir()))
    finally:
        for s in idle:
            s.close()
    assert during - before <= Limits().max_unauthenticated, (before, during)


FLOODER = """
import socket, sys
port, held = int(sys.argv[1]), []
while True:
    try:
        held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    except OSError:
        pass
    if len(held) > 300:  # keep 200 to 300 open, opening new ones all the time
        for s in held[:100]:
            s.close()
        del held[:100]
"""


def test_a_real_client_gets_in_while_another_process_keeps_opening_connections(
    backend: subprocess.Popen[str],
) -> None:
    port = backend.port  # type: ignore[attr-defined]
    flooder = subprocess.Popen([sys.executable, "-c", FLOODER, str(port)])
    try:
        time.sleep(1.0)  # the flood is under way
        times = []
        for _ in range(10):
            try:
                times.append(_hello_and_ping(port))
            except (EOFError, ConnectionError) as e:
                pytest.fail(f"the real client was dropped during the flood: {e!r}")
    finally:
        flooder.kill()
        flooder.wait(10)
    shown = [f"{t * 1000:.0f} ms" for t in times]
    print("hello+ping during a flood of new connections:", shown)
    assert statistics.median(times) < 0.1, shown
    assert backend.poll() is None
