"""A small agent-server stand-in on a real socket (stdlib ``http.server``).

It speaks the same wire format as openhands-agent-server 1.58 for the four
endpoints tandem uses (checked against the real one in
``test_agent_server_integration.py``): FastAPI-style ``{"detail": …}`` errors,
``X-Session-API-Key`` enforcement, ``Path must be absolute`` and ``Path is a
directory`` on upload, real files under a temporary home. What it adds is
control for the cache tests: it counts home lookups, can hold them until
released, and can fail the first N of them.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit


class FakeAgentServer:
    """Serve on 127.0.0.1:<free port> with HOME as the reported home directory."""

    def __init__(self, home: str, api_key: str | None = None) -> None:
        self.home = home
        self.api_key = api_key
        self.home_requests = 0
        self.fail_home = 0
        """How many of the next home lookups answer 500."""
        self.release = threading.Event()
        self.release.set()
        self.conversations: list[dict[str, Any]] = []
        self.at_capacity = False
        """Answer new conversations 429 with the real server's words (run limit reached)."""
        self.seen_keys: list[str | None] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """Base URL of the server."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeAgentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _send(self, status: int, body: Any, raw: bytes | None = None) -> None:
                data = raw if raw is not None else json.dumps(body).encode()
                self.send_response(status)
                ctype = "application/octet-stream" if raw is not None else "application/json"
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                key = self.headers.get("X-Session-API-Key")
                server.seen_keys.append(key)
                if server.api_key and key != server.api_key:
                    self._send(401, {"detail": "Unauthorized"})
                    return False
                return True

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("content-length", "0")))

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                if not self._authorized():
                    return
                if url.path == "/api/file/home":
                    with server._lock:
                        server.home_requests += 1
                        failing = server.fail_home > 0
                        if failing:
                            server.fail_home -= 1
                    server.release.wait(10)
                    if failing:
                        self._send(500, {"detail": "Internal Server Error"})
                    else:
                        self._send(200, {"home": server.home, "favorites": [], "locations": []})
                elif url.path == "/api/file/download":
                    target = Path(query["path"][0])
                    if not target.is_absolute():
                        self._send(400, {"detail": "Path must be absolute"})
                    elif not target.exists():
                        self._send(404, {"detail": "File not found"})
                    elif not target.is_file():
                        self._send(400, {"detail": "Path is not a file"})
                    else:
                        self._send(200, None, raw=target.read_bytes())
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self) -> None:  # noqa: N802
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                body = self._body()
                if not self._authorized():
                    return
                if url.path == "/api/file/upload":
                    self._upload(query["path"][0], body)
                elif url.path == "/api/conversations" and server.at_capacity:
                    # openhands event_service.py: ConversationRunLimitExceeded → 429.
                    self._send(429, {"detail": "Conversation run limit reached. "
                                               "Retry the request later."})
                elif url.path == "/api/conversations":
                    req = json.loads(body)
                    server.conversations.append(req)
                    reply = {
                        "id": str(uuid.uuid4()),
                        "workspace": {**req["workspace"], "kind": "LocalWorkspace"},
                        "execution_status": "idle",
                    }
                    self._send(201, reply)
                else:
                    self._send(404, {"detail": "Not Found"})

            def _upload(self, path: str, body: bytes) -> None:
                target = Path(path)
                if not target.is_absolute():
                    self._send(400, {"detail": "Path must be absolute"})
                    return
                head = f"Content-Type: {self.headers['content-type']}\r\n\r\n".encode()
                msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
                data: bytes | None = None
                for part in msg.iter_parts():
                    if part.get_param("name", header="content-disposition") == "file":
                        payload = part.get_payload(decode=True)
                        data = payload if isinstance(payload, bytes) else None
                if data is None:
                    self._send(
                        422, {"detail": [{"loc": ["body", "file"], "msg": "Field required"}]}
                    )
                    return
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                except IsADirectoryError:
                    self._send(400, {"detail": "Path is a directory"})
                    return
                except (FileExistsError, NotADirectoryError):
                    self._send(400, {"detail": "A parent of the path is not a directory"})
                    return
                self._send(200, {"success": True, "file_size": len(data)})

        return Handler


def main(argv: list[str]) -> int:
    """Run until stdin closes: ``fake_server.py HOME [KEY]``; prints the URL first.

    For the Emacs tests, which drive the real backend against this server.
    """
    import sys

    if len(argv) not in (1, 2):
        print("usage: fake_server.py HOME [KEY]", file=sys.stderr)
        return 2
    with FakeAgentServer(argv[0], argv[1] if len(argv) == 2 else None) as srv:
        print(srv.url, flush=True)
        sys.stdin.read()
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
