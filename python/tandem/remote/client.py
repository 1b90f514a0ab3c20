"""An async client of one OpenHands agent-server (its REST API over httpx).

Endpoints used (openhands-agent-server 1.58): ``GET /api/file/home``,
``POST /api/file/upload?path=`` (multipart field ``file``),
``GET /api/file/download?path=``, ``GET /api/file/archive`` (tar.gz),
``POST /api/bash/execute_bash_command``, ``POST /api/conversations`` and
``…/{id}/navigate``. Every one of
them checks ``X-Session-API-Key`` when the server has session keys.

The session API key lives only in this object's memory: it is not part of
its repr, of any error message, or of anything written to disk.
"""

from __future__ import annotations

import functools
import hashlib
import os
import ssl
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeAlias

import httpx
from pydantic import SecretStr

from tandem.capped import CappedBody
from tandem.protocol.base import TandemError
from tandem.protocol.remote import ConversationCreated, LlmSettings, UploadResult, is_absolute
from tandem.remote.errors import RemoteError, error_from_response, error_from_transport
from tandem.store import fsutil

KEY_HEADER = "X-Session-API-Key"
MAX_REPLY = 32 << 20
"""Bytes of one reply of the agent-server read into memory (a JSON reply, a file
`download` returns); a longer one fails while it is received. The archive a
mirror fetches and a file `download_to` saves stream to disk under their own
bounds."""
MAX_DOWNLOAD = 1 << 30
"""Bytes of one file `download_to` saves (it streams to disk)."""
Progress = Callable[[int, int], None]
"""Called with (bytes done, bytes total) while a file streams."""


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's one TLS context (the default trust store).

    Building one reads the CA bundle (20–40 ms here); a client is made per
    operation, several per remote turn, so they share this one.
    """
    return httpx.create_ssl_context()


def normalize_base_url(url: str) -> str:
    """URL as a base URL: http(s), a host, no credentials, query or fragment, no trailing ``/``."""
    if not isinstance(url, str) or not url.strip():
        raise TandemError("invalid", "the agent-server URL is empty")
    try:
        parsed = httpx.URL(url.strip())
    except httpx.InvalidURL as e:
        raise TandemError("invalid", f"not a URL: {url!r} ({e})") from e
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise TandemError("invalid", f"the agent-server URL must be http(s)://HOST…: {url!r}")
    if parsed.userinfo:
        # Credentials in a URL end up in logs and records; keys go in the header.
        raise TandemError("invalid", "put the session API key in auth-source, not in the URL")
    if parsed.query or parsed.fragment:
        raise TandemError("invalid", f"the agent-server URL may not have a query: {url!r}")
    return str(parsed.copy_with(path=parsed.path.rstrip("/") or "")).rstrip("/")


Query: TypeAlias = Mapping[str, str | int | list[str]]
"""The query parameters of a request (a list: the key repeated)."""


class _CountingReader:
    """A file wrapper that reports bytes read; httpx streams multipart from it."""

    def __init__(self, f: IO[bytes], total: int, progress: Progress | None) -> None:
        self._f = f
        self._total = total
        self._progress = progress
        self.sent = 0

    def fileno(self) -> int:
        return self._f.fileno()

    def tell(self) -> int:
        return self._f.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        pos = self._f.seek(offset, whence)
        if pos == 0:
            self.sent = 0
        return pos

    def read(self, n: int = -1) -> bytes:
        chunk = self._f.read(n)
        self.sent += len(chunk)
        if self._progress is not None and chunk:
            self._progress(self.sent, self._total)
        return chunk


class AgentServerClient:
    """REST client of the agent-server at BASE_URL, authenticating with API_KEY if given."""

    def __init__(
        self,
        base_url: str,
        api_key: str | SecretStr | None = None,
        *,
        timeout: float = 60.0,
    ) -> None:
        self.base_url = normalize_base_url(base_url)
        if isinstance(api_key, SecretStr):
            api_key = api_key.get_secret_value()
        if api_key is not None and (not api_key or any(ord(c) < 32 for c in api_key)):
            raise TandemError("invalid", "the session API key is empty or has control characters")
        headers = {KEY_HEADER: api_key} if api_key else {}
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=httpx.Timeout(timeout),
            verify=tls_context())
        self.has_key = bool(api_key)
        # Homes are cached per host and credential: a caller must never join
        # a lookup made with another key (a 401 would reach the right key's
        # caller, or a home the wrong key's caller). Only a digest is kept.
        digest = hashlib.sha256(api_key.encode()).hexdigest()[:16] if api_key else "none"
        self.cache_key = f"{self.base_url} key:{digest}"

    def __repr__(self) -> str:
        return f"AgentServerClient({self.base_url!r}, key={'set' if self.has_key else 'none'})"

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AgentServerClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _request(
        self,
        context: str,
        method: str,
        path: str,
        http: httpx.AsyncClient | None = None,
        **kw: Any,
    ) -> httpx.Response:
        client = http or self._http

        def over() -> RemoteError:
            return RemoteError("remote-invalid", f"{context}: the reply of {self.base_url} is "
                               f"over the {MAX_REPLY >> 20} MiB limit on one agent-server "
                               "reply; it was dropped as it arrived")

        try:
            response = await client.send(client.build_request(method, path, **kw), stream=True)
            try:
                assert isinstance(response.stream, httpx.AsyncByteStream)
                response.stream = CappedBody(response.stream, MAX_REPLY, over)
                await response.aread()
            finally:
                await response.aclose()
        except httpx.HTTPError as e:
            raise error_from_transport(context, self.base_url, e) from None
        if response.status_code >= 400:
            raise error_from_response(context, response)
        return response

    async def home(self) -> str:
        """The server user's home directory, as ``GET /api/file/home`` reports it.

        The lookup uses a connection of its own, so it outlives this client
        if other callers share it (see ``HomeCache``).
        """
        context = f"Home lookup on {self.base_url}"
        # Its own connection: this lookup may be shared by callers whose own
        # clients close (or are cancelled) before it completes.
        async with httpx.AsyncClient(
            base_url=self.base_url, headers=self._http.headers, timeout=self._http.timeout,
            verify=tls_context()) as http:
            response = await self._request(context, "GET", "/api/file/home", http)
        try:
            home = response.json().get("home")
        except (ValueError, AttributeError):
            home = None
        if not isinstance(home, str):
            raise RemoteError("remote-invalid", f"{context}: the reply has no 'home' string")
        return home

    async def upload(
        self, local: Path, remote_path: str, progress: Progress | None = None
    ) -> UploadResult:
        """Stream the local file LOCAL to the absolute server path REMOTE_PATH.

        Errors name the file and carry the server's message.
        """
        local = Path(local)
        context = f"Upload of {local} to {remote_path} failed"
        if not is_absolute(remote_path):
            raise TandemError("invalid", f"{context}: destination must be absolute")
        if not local.exists():
            raise TandemError("invalid", f"{context}: no such local file")
        if not local.is_file():  # a folder, or a FIFO that open() would block on
            raise TandemError("invalid", f"{context}: not a regular file")
        try:
            f = open(local, "rb")  # noqa: SIM115 - closed below, after the request
        except OSError as e:
            raise TandemError("invalid", f"{context}: {e.strerror or e}") from e
        with f:
            total = os.fstat(f.fileno()).st_size
            reader = _CountingReader(f, total, progress)
            files = {"file": (local.name, reader, "application/octet-stream")}
            response = await self._request(
                context, "POST", "/api/file/upload", params={"path": remote_path}, files=files
            )
        size = response.json().get("file_size", reader.sent)
        return UploadResult(file=str(local), path=remote_path, size=int(size))

    async def download(self, remote_path: str) -> bytes:
        """The bytes of the server file REMOTE_PATH (absolute)."""
        context = f"Download of {remote_path} failed"
        if not is_absolute(remote_path):
            raise TandemError("invalid", f"{context}: the path must be absolute")
        response = await self._request(
            context, "GET", "/api/file/download", params={"path": remote_path}
        )
        return response.content

    async def download_to(self, remote_path: str, dest: Path, max_bytes: int = MAX_DOWNLOAD,
                          durable: bool = True) -> int:
        """Save the server file REMOTE_PATH at DEST (write-temp, fsync, rename); return size.

        The file streams to disk, never whole in memory, up to MAX_BYTES. Without
        DURABLE there is no fsync (a mirror's download: the next sync repairs it).
        """
        context = f"Download of {remote_path} failed"
        if not is_absolute(remote_path):
            raise TandemError("invalid", f"{context}: the path must be absolute")
        dest = Path(dest)
        if not dest.parent.is_dir():
            raise TandemError("invalid", f"no such local folder: {dest.parent}")
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                size = await self._stream_to(context, "/api/file/download",
                                             {"path": remote_path}, out, max_bytes, "file")
                out.flush()
                if durable:
                    os.fsync(out.fileno())
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return size

    async def _stream_to(self, context: str, path: str, params: Query, out: IO[bytes],
                         max_bytes: int, what: str) -> int:
        """Stream the body of ``GET PATH`` into OUT, refusing one over MAX_BYTES."""
        size = 0
        try:
            async with self._http.stream("GET", path, params=params) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise error_from_response(context, response)
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > max_bytes:
                        raise RemoteError("remote-invalid",
                                          f"{context}: the {what} is over {max_bytes} bytes")
                    out.write(chunk)
        except httpx.HTTPError as e:
            raise error_from_transport(context, self.base_url, e) from None
        return size

    async def create_conversation(
        self, working_dir: str, llm: LlmSettings, initial_message: str | None = None
    ) -> ConversationCreated:
        """Start a conversation whose workspace is the absolute WORKING_DIR.

        Callers resolve WORKING_DIR first (``WorkingDirResolver``); a relative
        one would land wherever the server process happens to run.
        """
        context = f"Creating a conversation in {working_dir} failed"
        if not is_absolute(working_dir):
            raise TandemError("invalid", f"{context}: resolve the working dir first")
        body: dict[str, object] = {
            "agent_settings": {"llm": llm.wire()},
            "workspace": {"working_dir": working_dir},
        }
        if initial_message:
            body["initial_message"] = {
                "role": "user",
                "content": [{"type": "text", "text": initial_message}],
            }
        response = await self._request(context, "POST", "/api/conversations", json=body)
        reply = response.json()
        try:
            return ConversationCreated(
                id=str(reply["id"]),
                working_dir=str(reply["workspace"]["working_dir"]),
                execution_status=reply.get("execution_status"),
            )
        except (KeyError, TypeError) as e:
            raise RemoteError("remote-invalid", f"{context}: unexpected reply ({e})") from e

    # -- conversations that run turns (the remote engine) -------------------

    @property
    def socket_headers(self) -> dict[str, str]:
        """Headers for the session socket (the key in a header, never in the URL)."""
        key = self._http.headers.get(KEY_HEADER)
        return {KEY_HEADER: key} if key else {}

    async def start_conversation(self, body: Mapping[str, object]) -> dict[str, Any]:
        """``POST /api/conversations`` with BODY as built by the engine; the server's reply."""
        context = "Starting a remote conversation failed"
        response = await self._request(context, "POST", "/api/conversations", json=body)
        reply = response.json()
        if not isinstance(reply, dict) or not isinstance(reply.get("id"), str):
            raise RemoteError("remote-invalid", f"{context}: the reply has no conversation id")
        return reply

    async def conversation(self, conversation_id: str) -> dict[str, Any]:
        """``GET /api/conversations/{id}``: its state (``execution_status``, ``stats`` …)."""
        response = await self._request(
            f"Reading conversation {conversation_id} failed", "GET",
            f"/api/conversations/{conversation_id}")
        reply = response.json()
        if not isinstance(reply, dict):
            raise RemoteError("remote-invalid", f"conversation {conversation_id}: not an object")
        return reply

    async def send_message(self, conversation_id: str, text: str, run: bool = True) -> None:
        """Post the user's TEXT to the conversation and, with RUN, start the agent.

        Without RUN (a steer: the engine runs the agent itself next) the server
        only appends the message to the conversation's events.
        """
        await self._request(
            f"Sending the message to conversation {conversation_id} failed", "POST",
            f"/api/conversations/{conversation_id}/events",
            json={"role": "user", "content": [{"type": "text", "text": text}], "run": run})

    async def respond_to_confirmation(self, conversation_id: str, accept: bool,
                                      reason: str) -> None:
        """Accept or reject every action waiting for confirmation."""
        await self._request(
            f"Answering the confirmation in conversation {conversation_id} failed", "POST",
            f"/api/conversations/{conversation_id}/events/respond_to_confirmation",
            json={"accept": accept, "reason": reason})

    async def run(self, conversation_id: str) -> None:
        """Let the agent go on (after a rejection the server stops, ``idle``); 409 is fine."""
        try:
            await self._request(
                f"Resuming conversation {conversation_id} failed", "POST",
                f"/api/conversations/{conversation_id}/run")
        except RemoteError as e:
            if e.status != 409:  # already running: what we asked for
                raise

    async def interrupt(self, conversation_id: str) -> None:
        """Stop the agent now (``/interrupt``: cancels the LLM call in flight)."""
        await self._request(
            f"Interrupting conversation {conversation_id} failed", "POST",
            f"/api/conversations/{conversation_id}/interrupt")

    async def search_events(self, conversation_id: str, page_id: str | None = None,
                            limit: int = 100) -> dict[str, Any]:
        """One page of ``GET …/events/search`` (``items``, ``next_page_id``)."""
        params: dict[str, str | int] = {"limit": limit}
        if page_id:
            params["page_id"] = page_id
        response = await self._request(
            f"Reading the events of conversation {conversation_id} failed", "GET",
            f"/api/conversations/{conversation_id}/events/search", params=params)
        reply = response.json()
        return reply if isinstance(reply, dict) else {}

    async def archive_to(
        self, working_dir: str, dest: Path, max_bytes: int, excludes: list[str]
    ) -> int:
        """Stream the ``tar.gz`` archive of the server dir WORKING_DIR into DEST; return its size.

        ``GET /api/file/archive?path=…&format=tar.gz&use_default_excludes=false``
        with EXCLUDES as ``exclude``. A reply over MAX_BYTES is cut off and
        refused (DEST removed): the archive is untrusted input.
        """
        context = f"Archive of {working_dir} failed"
        if not is_absolute(working_dir):
            raise TandemError("invalid", f"{context}: the path must be absolute")
        params: Query = {"path": working_dir, "format": "tar.gz",
                         "use_default_excludes": "false", "exclude": list(excludes)}
        try:
            with fsutil.create_private(dest) as out:
                return await self._stream_to(context, "/api/file/archive", params, out,
                                             max_bytes, "archive")
        except BaseException:
            Path(dest).unlink(missing_ok=True)
            raise

    async def execute_bash(self, command: str, cwd: str, timeout: int = 120) -> tuple[int, str]:
        """Run COMMAND in the server dir CWD (``POST /api/bash/execute_bash_command``).

        Returns (exit code, stdout + stderr). Callers quote every argument
        (``shlex.quote``): the server runs the string in a shell.
        """
        context = f"Command in {cwd} failed"
        if not is_absolute(cwd):
            raise TandemError("invalid", f"{context}: the dir must be absolute")
        response = await self._request(
            context, "POST", "/api/bash/execute_bash_command",
            json={"command": command, "cwd": cwd, "timeout": timeout},
            timeout=httpx.Timeout(timeout + 30.0))
        reply = response.json()
        if not isinstance(reply, dict):
            raise RemoteError("remote-invalid", f"{context}: unexpected reply")
        code = reply.get("exit_code")
        output = (reply.get("stdout") or "") + (reply.get("stderr") or "")
        return (int(code) if isinstance(code, int) else -1), output

    async def navigate(self, conversation_id: str, event_id: str | None) -> dict[str, Any]:
        """Move conversation CONVERSATION_ID's HEAD to EVENT_ID (None: before every event).

        ``POST /api/conversations/{id}/navigate``: the same conversation, its
        agent continues from that event; no new conversation is made.
        """
        context = f"Rewinding conversation {conversation_id} failed"
        response = await self._request(
            context, "POST", f"/api/conversations/{conversation_id}/navigate",
            json={"event_id": event_id})
        reply = response.json()
        if not isinstance(reply, dict):
            raise RemoteError("remote-invalid", f"{context}: unexpected reply")
        return reply
