"""A real HTTP server on 127.0.0.1 for the fake LLM APIs.

The server runs ``http.server.ThreadingHTTPServer`` in a background thread,
records every request (method, path, headers, parsed JSON body) and streams
Server-Sent Events with chunked transfer encoding, so a cut stream looks to a
client exactly like a real dropped connection (an incomplete chunked body).
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fakes.script import Reply, Script


class RecordedRequest(dict[str, Any]):
    """One request as received: ``method``, ``path``, ``query``, ``headers``, ``body``."""

    @property
    def body(self) -> Any:
        """The parsed JSON body (a string when it was not JSON, None when empty)."""
        return self["body"]

    @property
    def path(self) -> str:
        """The URL path without the query."""
        return str(self["path"])


class ClientGone(Exception):
    """The client closed the connection while we were streaming."""


class FakeHandler(BaseHTTPRequestHandler):
    """Common request plumbing; subclasses implement ``route``."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # many tiny SSE writes: do not wait for ACKs
    server: FakeHTTPServer

    # --- plumbing -----------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Stay quiet: a stderr line per request would drown test output."""

    def _read(self) -> RecordedRequest:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        parts = urlsplit(self.path)
        rec = RecordedRequest(
            method=self.command,
            path=parts.path,
            query={k: v[-1] for k, v in parse_qs(parts.query).items()},
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        self.server.record(rec)
        return rec

    def _dispatch(self) -> None:
        self.close_connection = True
        rec = self._read()
        try:
            self.route(rec)
        except ClientGone:
            pass

    do_GET = _dispatch  # noqa: N815
    do_POST = _dispatch  # noqa: N815
    do_HEAD = _dispatch  # noqa: N815

    def route(self, rec: RecordedRequest) -> None:
        """Answer one request; subclasses override."""
        self.send_json(404, {"error": "not found"})

    # --- responses ----------------------------------------------------------------

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        """Send a complete JSON response."""
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("connection", "close")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self._write(data)

    def start_stream(self, headers: dict[str, str] | None = None) -> None:
        """Begin a ``text/event-stream`` response with chunked encoding."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()

    def sse(self, data: str, event: str | None = None, delay: float = 0.0) -> None:
        """Send one SSE event (one chunk), after sleeping DELAY seconds."""
        if delay:
            time.sleep(delay)
        text = (f"event: {event}\n" if event else "") + f"data: {data}\n\n"
        self._chunk(text.encode())

    def sse_comment(self, text: str) -> None:
        """Send an SSE comment line (a keep-alive)."""
        self._chunk(f": {text}\n\n".encode())

    def end_stream(self) -> None:
        """Finish the chunked body properly."""
        self._write(b"0\r\n\r\n")

    def cut_stream(self) -> None:
        """Drop the connection without finishing the chunked body."""
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def stall(self, ping: Any) -> None:
        """Keep the stream open, calling PING every 50 ms, until the client leaves."""
        deadline = time.monotonic() + 60
        while not self.server.stopping.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
            ping()

    def _chunk(self, data: bytes) -> None:
        self._write(b"%x\r\n%s\r\n" % (len(data), data))

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError as exc:
            raise ClientGone() from exc

    def reply_for(self, rec: RecordedRequest) -> Reply:
        """The scripted reply to REC."""
        body = rec.body if isinstance(rec.body, dict) else {}
        return self.server.script.next_reply(body)


class FakeHTTPServer(ThreadingHTTPServer):
    """The listening server; holds the script and the recorded requests."""

    daemon_threads = True

    def __init__(
        self,
        handler: type[FakeHandler],
        script: Script,
        record_path: Path | None = None,
        port: int = 0,
    ) -> None:
        super().__init__(("127.0.0.1", port), handler)
        self.script = script
        self.requests: list[RecordedRequest] = []
        self.stopping = threading.Event()
        self._record_path = record_path
        self._lock = threading.Lock()

    def record(self, rec: RecordedRequest) -> None:
        """Keep REC; append it as one JSON line to the record file if there is one."""
        with self._lock:
            self.requests.append(rec)
            if self._record_path is not None:
                # One write per line: a reader never sees half a record.
                with open(self._record_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(rec) + "\n")


class FakeServer:
    """Start/stop wrapper: ``with FakeAnthropic(script) as fake: fake.base_url``."""

    handler: type[FakeHandler] = FakeHandler

    def __init__(
        self,
        script: Script | list[Reply] | None = None,
        record_path: Path | None = None,
        port: int = 0,
    ) -> None:
        if script is None:
            script = Script()
        elif isinstance(script, list):
            script = Script(list(script))
        self._server = FakeHTTPServer(self.handler, script, record_path, port)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The listening port."""
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash, no ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        return list(self._server.requests)

    def api_requests(self, path: str) -> list[RecordedRequest]:
        """The POST requests to PATH."""
        return [r for r in self.requests if r["method"] == "POST" and r.path == path]

    @property
    def script(self) -> Script:
        """The script in use."""
        return self._server.script

    def start(self) -> FakeServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
        self._server.server_close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_main(server_cls: type[FakeServer], argv: list[str] | None = None) -> int:
    """Command line of a fake: ``--port 0 --script FILE.json [--record FILE]``."""
    parser = argparse.ArgumentParser(description=server_cls.__doc__)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--script", type=Path, help="script JSON (see fakes/script.py)")
    parser.add_argument("--record", type=Path, help="append each request as a JSON line")
    args = parser.parse_args(argv)
    script = Script.from_file(args.script) if args.script else Script(default=Reply(text="OK"))
    fake = server_cls(script, record_path=args.record, port=args.port)
    fake.start()
    print(fake.port, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    fake.stop()
    return 0
