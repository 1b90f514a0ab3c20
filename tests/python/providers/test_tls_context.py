"""The TLS context of a provider's client: an ``http://`` model server loads no trust store.

Start-up: loading the CA bundle was the largest single cost of a
local turn. The context used instead must fail closed: a TLS connection
through it is refused, never unverified (checked against a real TLS server).
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tandem.providers.native import tls_for


def test_an_https_url_verifies_with_the_trust_store() -> None:
    assert tls_for("https://api.openai.com/v1/chat/completions") is True
    assert tls_for("HTTPS://example.com/v1") is True


def test_an_http_url_gets_a_verifying_context_that_trusts_nothing() -> None:
    context = tls_for("http://127.0.0.1:8080/v1/chat/completions")
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A real HTTPS server on 127.0.0.1 with a self-signed certificate: (port, its cert)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not on PATH: no certificate for the TLS server")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            try:
                with server_context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(65536)
                    tls.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n"
                                b"connection: close\r\n\r\nok")
            except (ssl.SSLError, OSError):
                pass  # the client refused the certificate: what the test wants

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port, cert
    stop.set()
    thread.join(5)
    listener.close()


def test_a_tls_connection_through_the_http_context_is_refused(
        tls_server: tuple[int, Path]) -> None:
    port, cert = tls_server
    url = f"https://127.0.0.1:{port}/"
    # The server is sound: a client that trusts its certificate gets the answer …
    trusting = ssl.create_default_context(cafile=str(cert))
    with httpx.Client(verify=trusting) as client:
        assert client.get(url).text == "ok"
    # … and the context an http:// provider gets refuses it instead of going unverified.
    with httpx.Client(verify=tls_for("http://127.0.0.1:1/v1")) as client, \
            pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        client.get(url)
