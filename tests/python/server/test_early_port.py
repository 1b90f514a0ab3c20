"""``tandem serve`` prints its port before building its services (start-up).

A client that connects at once — before the services and the method table
exist — is accepted, waits, and gets the same replies as one that came later;
the cap on connections that have not said hello counts the waiting ones too
(past it the oldest of them is dropped).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tandem import __version__

from .conftest import TOKEN
from .epc_peer import REPO, Peer, start_backend

SOURCE = REPO / "python"


def test_a_request_sent_right_after_the_port_line_is_answered(
        backend: subprocess.Popen[str]) -> None:
    peer = Peer(backend.port)  # type: ignore[attr-defined]
    try:
        peer.call("hello", {"token": TOKEN})
        kind, _uid, reply = peer.recv()
        assert kind == "return" and reply["version"] == __version__
        peer.call("ping")
        kind, _uid, reply = peer.recv()
        assert kind == "return"
        peer.call("sessions/list", {"cwd": "/"})
        kind, _uid, reply = peer.recv()
        assert kind == "return"
    finally:
        peer.close()


def test_connections_waiting_for_the_services_count_against_the_cap(tmp_path: Path) -> None:
    proc = start_backend(tmp_path, TOKEN, env={"TANDEM_MAX_UNAUTHENTICATED": "2"})
    port = proc.port  # type: ignore[attr-defined]
    oldest = socket.create_connection(("127.0.0.1", port), timeout=30)
    waiting = [Peer(port) for _ in range(2)]
    try:
        oldest.settimeout(30)
        # The third takes the oldest one's slot: that one is closed without a word
        # (before or after the services are up).
        assert oldest.recv(1) == b""
        # The two waiting ones are served once the backend is ready.
        for peer in waiting:
            peer.call("hello", {"token": TOKEN})
            assert peer.recv()[0] == "return"
    finally:
        oldest.close()
        for peer in waiting:
            peer.close()
        proc.terminate()
        proc.wait(10)


def test_a_python_without_the_dependencies_fails_before_the_port_line(tmp_path: Path) -> None:
    # No site-packages (-S): tandem itself is found, pydantic and the rest are not. Emacs
    # offers an install on this error, so it must come instead of a port.
    env = {k: v for k, v in os.environ.items() if k != "TANDEM_TOKEN"}
    env.update(TANDEM_HOME=str(tmp_path / "home"), PYTHONPATH=str(SOURCE))
    done = subprocess.run([sys.executable, "-S", "-m", "tandem.cli", "serve"],
                          input='{"token": "t"}\n', capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode != 0 and done.stdout == ""
    assert "No module named 'pydantic'" in done.stderr


def test_hello_names_every_method_of_the_table() -> None:
    # `hello` answers from this list before the adapters are imported (start-up).
    from tandem.server.table import METHOD_NAMES, build_table
    assert sorted(METHOD_NAMES) == sorted(build_table()), (
        "update tandem.server.table.METHOD_NAMES to the table's names")
