"""A tiny stand-in agent-server that serves a given archive (real socket, stdlib).

Only ``GET /api/file/archive`` answers: with ``ArchiveServer.archive``
(bytes the test built, hostile or not). Each request's query is kept in
``requests`` so a test sees what tandem asked for.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


class ArchiveServer:
    """Serves ARCHIVE at ``/api/file/archive`` on 127.0.0.1 until closed."""

    def __init__(self, archive: bytes = b"") -> None:
        self.archive = archive
        self.requests: list[dict[str, list[str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                url = urlsplit(self.path)
                if url.path != "/api/file/archive":
                    body = b'{"detail": "Not Found"}'
                    self.send_response(404)
                else:
                    server.requests.append(parse_qs(url.query))
                    body = server.archive
                    self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        """Base URL of the server."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ArchiveServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
