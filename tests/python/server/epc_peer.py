"""A minimal EPC peer in Python for transport tests: frames in, frames out.

It speaks the wire format directly over a socket (not through our server's
code), so the tests see exactly what Emacs would see.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from tandem.protocol import sexp

REPO = Path(__file__).resolve().parents[3]


class Peer:
    """A blocking EPC client on one socket."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.uid = 0
        self.buf = b""

    def send(self, message: Any) -> None:
        payload = sexp.dumps(message).encode()
        self.sock.sendall(b"%06x" % len(payload) + payload)

    def send_raw(self, payload: bytes) -> None:
        self.sock.sendall(b"%06x" % len(payload) + payload)

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self) -> Any:
        length = int(self._read(6), 16)
        return sexp.loads(self._read(length).decode())

    def call(self, method: str, params: Any = None) -> Any:
        self.uid += 1
        args = [] if params is None else [params]
        self.send([sexp.Symbol("call"), self.uid, sexp.Symbol(method), args])
        return self.uid

    def outcome(self, timeout: float = 10.0) -> list[Any]:
        """Messages received until the server closes; raises if it stays open."""
        self.sock.settimeout(timeout)
        got = []
        try:
            while True:
                got.append(self.recv())
        except (EOFError, ConnectionResetError):
            return got
        finally:
            self.sock.settimeout(30)

    def close(self) -> None:
        self.sock.close()


def start_backend(
    home: Path,
    token: str = "secret-token",
    secrets: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    nofile: int | None = None,
    argv: list[str] | None = None,
) -> subprocess.Popen[str]:
    """Start ``tandem serve`` as Emacs does; return the process with .port set.

    The token (and SECRETS) go in one JSON line on its stdin, never in its
    environment. ENV adds variables (limits for tests); NOFILE caps its open
    descriptors as a desktop session's default of 1024 would. ARGV replaces
    the command (a benchmark's instrumented server).
    """
    env = dict(os.environ, TANDEM_HOME=str(home), **(env or {}))
    env.pop("TANDEM_TOKEN", None)

    def limit_descriptors() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.Popen(
        argv or [sys.executable, "-m", "tandem.cli", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
        preexec_fn=limit_descriptors,
    )
    assert proc.stdout is not None and proc.stdin is not None
    proc.stdin.write(json.dumps({"token": token, "secrets": secrets or {}}) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    proc.port = int(line)  # type: ignore[attr-defined]
    return proc
