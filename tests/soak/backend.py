"""The backend under soak: a real ``tandem serve`` and one EPC connection to it.

`Client` speaks the wire as Emacs does (frames, ``hello``, event batches
acknowledged as they come) and keeps every event; `Backend` starts the
process with a fault plan in ``TANDEM_FAULTS``, kills it with SIGKILL and
reads which fault point fired.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tandem.protocol import sexp

REPO = Path(__file__).resolve().parents[2]
TOKEN = "soak-token"


class Dead(Exception):
    """The connection closed under a call: the backend died or dropped it."""


@dataclass
class CallError(Exception):
    """The backend answered a call with an error."""

    code: str
    message: str


@dataclass
class Client:
    """A blocking EPC client on one socket; events land in ``events``."""

    port: int
    events: list[dict[str, Any]] = field(default_factory=list)
    uid: int = 0

    def __post_init__(self) -> None:
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        self.buf = b""

    def _send(self, message: Any) -> None:
        payload = sexp.dumps(message).encode()
        try:
            self.sock.sendall(b"%06x" % len(payload) + payload)
        except OSError as e:
            raise Dead(str(e)) from None

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            try:
                chunk = self.sock.recv(1 << 20)
            except TimeoutError:
                raise
            except OSError as e:
                raise Dead(str(e)) from None
            if not chunk:
                raise Dead("connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _recv(self) -> Any:
        length = int(self._read(6), 16)
        return sexp.loads(self._read(length).decode())

    def call(self, method: str, params: dict[str, Any] | None = None,
             timeout: float = 60.0) -> Any:
        """Call METHOD; its reply, or `CallError`; `Dead` when the socket closes."""
        self.uid += 1
        uid = self.uid
        args = [] if params is None else [params]
        self._send([sexp.Symbol("call"), uid, sexp.Symbol(method), args])
        self.sock.settimeout(timeout)
        while True:
            msg = self._recv()
            kind = str(msg[0])
            if kind == "call":  # an event batch pushed to Emacs: take it, acknowledge it
                for batch in msg[3]:
                    self.events.extend(e for e in (batch or []) if isinstance(e, dict))
                self._send([sexp.Symbol("return"), msg[1], None])
            elif msg[1] == uid:
                if kind == "return":
                    return msg[2]
                err = msg[2] if isinstance(msg[2], dict) else {"code": kind, "message": str(msg[2])}
                raise CallError(str(err.get("code")), str(err.get("message")))

    def close(self) -> None:
        """Close the socket (a dropped connection, as far as the backend knows)."""
        self.sock.close()


@dataclass
class Backend:
    """One ``tandem serve`` at a time in HOME, restarted after each death."""

    home: Path
    env: dict[str, str]
    starts: int = 0
    proc: subprocess.Popen[bytes] | None = None
    fault_log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.fault_log = self.home.parent / "faults.log"

    def start(self, faults: str = "") -> Client:
        """Start the backend with fault plan FAULTS; a connected, greeted client."""
        self.starts += 1
        env = dict(os.environ, **self.env, TANDEM_HOME=str(self.home),
                   TANDEM_FAULTS=faults, TANDEM_FAULTS_LOG=str(self.fault_log))
        env.pop("TANDEM_TOKEN", None)
        err = open(self.home.parent / f"stderr-{self.starts}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tandem.cli", "serve"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=err, env=env, cwd=REPO)
        err.close()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps({"token": TOKEN, "secrets": {}}) + "\n").encode())
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line.strip():
            raise RuntimeError(f"the backend did not start: {self.stderr_tail()}")
        return self.connect(int(line))

    def connect(self, port: int | None = None) -> Client:
        """A new greeted connection to the running backend."""
        client = Client(port if port is not None else self.port)
        self.port = client.port
        client.call("hello", {"token": TOKEN})
        return client

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the backend (``kill -9``) and reap it."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        """End the backend politely (SIGTERM, then SIGKILL)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

    def wait_dead(self, seconds: float = 5.0) -> bool:
        """Whether the process has exited within SECONDS."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.alive():
                return True
            time.sleep(0.02)
        return False

    def fired(self) -> list[str]:
        """The fault points that fired so far ("point action" lines), and forget them."""
        try:
            lines = self.fault_log.read_text().splitlines()
        except FileNotFoundError:
            return []
        self.fault_log.unlink()
        return lines

    def stderr_tail(self) -> str:
        """The last lines of the latest start's stderr."""
        try:
            text = (self.home.parent / f"stderr-{self.starts}.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-20:])
