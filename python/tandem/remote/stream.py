"""A conversation's events from the agent-server's session socket, surviving drops.

``/sockets/session/{id}?after_seq=N`` (openhands-agent-server ≥ 1.58) sends a
``sync`` frame, then every durable event with ``seq > N`` from disk, then live
frames: ``durable {seq, event}``, ``transient {event}`` (not persisted: the
state snapshot sent on connect), ``item_started`` / ``delta`` /
``item_aborted`` (streamed text). The cursor is the last ``seq`` delivered: a
dropped socket reconnects with ``after_seq=cursor`` after a backoff, and an
event already delivered (seq ≤ cursor) is dropped, so none is lost or repeated.
Reconnects are bounded: after ATTEMPTS failures in a row the stream fails with
a named error. The session API key goes in a header, never in the URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any, TypedDict

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from tandem.protocol.errors import ErrorCode
from tandem.remote.client import tls_context
from tandem.remote.errors import RemoteError

log = logging.getLogger("tandem.remote.stream")

MAX_FRAME = 8 << 20
"""Bytes of one frame of the session socket (websockets' ``max_size``): a longer
one is refused while it is received (the socket closes with 1009)."""
TOO_BIG = 1009
"""Close code the client sends for a frame over `MAX_FRAME`."""
GONE = 4004
"""Close code of a conversation the server does not know (any more)."""
AUTH_FAILED = 4001


def socket_url(base_url: str, conversation_id: str, after_seq: int | None) -> str:
    """The session socket's URL on BASE_URL (http→ws), resuming after AFTER_SEQ."""
    ws = "wss" + base_url[5:] if base_url.startswith("https") else "ws" + base_url[4:]
    url = f"{ws}/sockets/session/{conversation_id}"
    return url if after_seq is None else f"{url}?after_seq={after_seq}"


class StreamOptions(TypedDict, total=False):
    """How a `SessionStream` reconnects (tests make the waits short)."""

    attempts: int
    backoff: float
    max_backoff: float
    open_timeout: float


class SessionStream:
    """The events of one conversation, once each, in order, across reconnects."""

    def __init__(self, base_url: str, conversation_id: str, headers: dict[str, str],
                 *, attempts: int = 6, backoff: float = 0.1, max_backoff: float = 2.0,
                 open_timeout: float = 10.0) -> None:
        self.base_url = base_url
        self.conversation_id = conversation_id
        self._headers = headers
        self.attempts = attempts
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.open_timeout = open_timeout
        self.cursor: int | None = None
        """The seq of the last durable event delivered (None: none yet)."""
        self.reconnects = 0
        self._ws: ClientConnection | None = None
        self.initial_state: dict[str, Any] | None = None
        """The conversation's state when `open` connected (its ``full_state`` snapshot:
        ``stats``, ``leaf_event_id`` …), None when the server sent none."""
        self._first: dict[str, Any] | None = None
        """The frame `open` read after ``sync``, still to be yielded by `frames`."""

    async def open(self) -> None:
        """Connect live and read the ``sync`` frame: the cursor is the log's end now.

        Call before posting the message, so every event of the turn is after it.
        The frame after it, the state the server snapshots on connect (before the
        ``sync`` frame is sent), is read too: `initial_state` (`frames` still
        yields it first). A conversation the server does not know fails here,
        ``remote-gone``.
        """
        self._ws = await self._connect(None)
        try:
            sync = await self._sync(self._ws)
        except ConnectionClosed as e:
            gone = self._closed_error(e.rcvd.code if e.rcvd else None,
                                      e.rcvd.reason if e.rcvd else None)
            if gone is not None:
                raise gone from None
            raise
        through = sync.get("through_seq")
        self.cursor = through if isinstance(through, int) else -1
        self._first = None
        # None (another server; a close: `frames` reconnects): the caller asks for the state.
        with contextlib.suppress(TimeoutError, ConnectionClosed):
            self._first = _frame(await asyncio.wait_for(self._ws.recv(), self.open_timeout),
                                 self.conversation_id)
        event = self._first.get("event") if self._first else None
        if (self._first is not None and self._first.get("type") == "transient"
                and isinstance(event, dict) and event.get("key") == "full_state"
                and isinstance(event.get("value"), dict)):
            self.initial_state = event["value"]

    async def _connect(self, after_seq: int | None) -> ClientConnection:
        url = socket_url(self.base_url, self.conversation_id, after_seq)
        tls: dict[str, Any] = {"ssl": tls_context()} if url.startswith("wss:") else {}
        try:
            return await websockets.connect(
                url, additional_headers=self._headers, open_timeout=self.open_timeout, **tls,
                ping_interval=10, ping_timeout=20, max_size=MAX_FRAME, max_queue=4)
        except InvalidStatus as e:
            status = e.response.status_code
            code: ErrorCode = "unauthorized" if status in (401, 403) else "remote-failed"
            raise RemoteError(code, f"the session socket of conversation {self.conversation_id}"
                                    f" on {self.base_url} was refused (HTTP {status})",
                              status) from None

    def _refuse_too_big(self, closed: ConnectionClosed) -> None:
        """Raise the named error when CLOSED is ours, for a frame over `MAX_FRAME`."""
        if closed.rcvd is None and closed.sent is not None and closed.sent.code == TOO_BIG:
            raise RemoteError("remote-invalid", f"the session socket of conversation "
                              f"{self.conversation_id} on {self.base_url} sent a frame over "
                              f"the {MAX_FRAME >> 20} MiB limit on one agent-server frame; it "
                              "was refused as it arrived") from None

    async def _sync(self, ws: ClientConnection) -> dict[str, Any]:
        try:
            raw = await asyncio.wait_for(ws.recv(), self.open_timeout)
        except ConnectionClosed as e:
            self._refuse_too_big(e)
            raise
        frame = json.loads(raw)
        if frame.get("type") != "sync":
            raise RemoteError("remote-invalid", f"the session socket began with "
                                                f"{frame.get('type')!r}, not a sync frame")
        return dict(frame)

    async def close(self) -> None:
        """Close the socket (the conversation goes on on the server)."""
        if self._ws is not None:
            await self._ws.close()
            self._ws = None

    def _closed_error(self, code: int | None, reason: str | None) -> RemoteError | None:
        if code == GONE:
            return RemoteError("remote-gone", f"the agent-server {self.base_url} no longer has "
                                            f"conversation {self.conversation_id} "
                                            f"({reason or 'gone'})")
        if code == AUTH_FAILED:
            return RemoteError("unauthorized", f"the agent-server {self.base_url} refused the "
                                               "session socket: the session API key is wrong")
        return None

    def _deliver(self, frame: dict[str, Any]) -> bool:
        """Whether FRAME is new (moving the cursor past a durable one); an error frame fails."""
        if frame.get("type") == "durable":
            seq = frame.get("seq")
            if not isinstance(seq, int) or (self.cursor is not None and seq <= self.cursor):
                return False  # already delivered before a reconnect
            self.cursor = seq
        elif frame.get("type") == "error":
            raise RemoteError("remote-failed", f"the session socket of "
                              f"{self.conversation_id}: {frame.get('detail')}")
        return True

    async def frames(self) -> AsyncIterator[dict[str, Any]]:
        """Every frame after the cursor; ``{"type": "reconnected"}`` after each reconnect."""
        if self._ws is None:
            await self.open()
        first, self._first = self._first, None
        if first is not None and self._deliver(first):
            yield first
        failures = 0
        while True:
            ws = self._ws
            try:
                if ws is None:
                    ws = self._ws = await self._connect(self.cursor)
                    await self._sync(ws)
                    self.reconnects += 1
                    failures = 0
                    yield {"type": "reconnected"}
                async for raw in ws:
                    frame = _frame(raw, self.conversation_id)
                    if self._deliver(frame):
                        yield frame
                code, reason = ws.close_code, ws.close_reason
                why = f"closed by the server ({code})"
            except ConnectionClosed as e:
                # Reconnecting would fetch the same event again: fail by name.
                self._refuse_too_big(e)
                code = e.rcvd.code if e.rcvd is not None else None
                reason = e.rcvd.reason if e.rcvd is not None else None
                why = f"closed ({e})"
            except (OSError, TimeoutError, InvalidHandshake) as e:
                code, reason, why = None, None, f"{type(e).__name__}: {e}"
            gone = self._closed_error(code, reason)
            if gone is not None:
                raise gone
            self._ws = None
            failures += 1
            if failures > self.attempts:
                raise RemoteError("remote-unreachable", f"lost the session socket of "
                                  f"conversation {self.conversation_id} on {self.base_url}: "
                                  f"{self.attempts} reconnects failed ({why})")
            delay = min(self.backoff * 2 ** (failures - 1), self.max_backoff)
            log.info("session socket %s dropped (%s); reconnecting in %.2fs",
                     self.conversation_id, why, delay)
            await asyncio.sleep(delay)


def _frame(raw: str | bytes, conversation_id: str) -> dict[str, Any]:
    """RAW as a JSON object, or a named error: the socket's bytes are untrusted."""
    try:
        frame = json.loads(raw)
    except ValueError:
        frame = None
    if not isinstance(frame, dict):
        raise RemoteError("remote-invalid", f"the session socket of {conversation_id} sent "
                          f"something that is not a JSON object: {str(raw)[:80]!r}")
    return frame
