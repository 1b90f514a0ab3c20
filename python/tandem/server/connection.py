"""One EPC connection: reads frames, runs calls as tasks, writes under one lock.

The defects of python-epc 0.0.5 this avoids (tests in tests/python/server):
every frame goes out through `_write` under one `asyncio.Lock`, so concurrent
large replies never interleave; each call runs in its own task, so a handler
can await a call back into Emacs while the reader keeps reading its reply;
replies over `MAX_FRAME` are paged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import itertools
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from tandem.protocol import sexp
from tandem.protocol.base import MethodSpec, TandemError
from tandem.protocol.peer import CURRENT
from tandem.server import framing
from tandem.server.limits import Limits
from tandem.server.paging import PageStore

if TYPE_CHECKING:
    from tandem.app import App

log = logging.getLogger("tandem.server")

AFTER_EVENTS_WAIT = 10.0
"""Most seconds a reply of `MethodSpec.after_events` waits for the events before it
(a peer that called from inside an event handler holds its own events back)."""

_UID = re.compile(r"\s*\(\s*[a-z-]+\s+([0-9]{1,15})(?![0-9])")


class RemoteError(Exception):
    """Emacs answered one of our calls with an error."""


class ConnectionClosed(Exception):
    """The connection ended while a call into Emacs was waiting."""


def _sym(name: str) -> sexp.Symbol:
    return sexp.Symbol(name)


def error_value(code: str, message: str, data: Any = None,
                command: str | None = None) -> dict[str, Any]:
    """The ERR part of a ``return-error`` frame (docs/protocol.md, Errors).

    ``command`` is there only when the error names an Emacs command.
    """
    err = {"code": code, "message": message, "data": data}
    return err if command is None else {**err, "command": command}


def describe_validation(e: ValidationError) -> str:
    """A one-line readable account of what was wrong with the params."""
    parts = []
    for err in e.errors():
        where = ".".join(str(p).replace("_", "-") for p in err["loc"]) or "params"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


class Connection:
    """An authenticated-on-first-call EPC peer (normally Emacs)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        methods: Mapping[str, MethodSpec | None],
        app: object,
        token: str,
        on_auth: Callable[[Connection], None] | None = None,
        limits: Limits | None = None,
        services: asyncio.Future[tuple[App, dict[str, MethodSpec]]] | None = None,
    ) -> None:
        """A connection answering METHODS with APP.

        APP is the `App` (or, until SERVICES bring it, what ``hello`` reads of
        it). With SERVICES (start-up), METHODS names every method but holds only
        those ready now (``hello``, ``ping``, ``page``, ``doctor``); any other
        call waits for SERVICES, the App and the whole table, and is then
        answered from them.
        """
        self.reader = reader
        self.writer = writer
        self.methods = methods
        self.app = app
        self._services = services
        self.token = token
        self.on_auth = on_auth
        self.limits = limits or Limits()
        self.authed = False
        self.closed = asyncio.Event()
        self.pages = PageStore()
        self._write_lock = asyncio.Lock()
        self._uids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.events_delivered: Callable[[], Awaitable[None]] | None = None
        """Awaits every event published so far reaching this peer (set when the
        event pusher attaches it); replies of `MethodSpec.after_events` wait on it."""

    # -- writing ---------------------------------------------------------

    async def _write(self, payload: bytes) -> None:
        async with self._write_lock:
            self.writer.write(framing.frame_bytes(payload))
            await self.writer.drain()

    async def _send(self, message: list[Any]) -> None:
        await self._write(framing.encode_payload(message))

    async def call(self, method: str, *args: Any, timeout: float | None = 30.0) -> Any:
        """Call METHOD in Emacs with ARGS and return its value."""
        return await self.call_encoded(
            method, framing.encode_payload(list(args)), timeout=timeout
        )

    async def call_encoded(self, method: str, args: bytes, timeout: float | None = 30.0) -> Any:
        """Call METHOD in Emacs with ARGS, the argument list already encoded."""
        if self.closed.is_set():
            raise ConnectionClosed("connection closed")
        uid = next(self._uids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[uid] = fut
        try:
            await self._write(b"(call %d %s %s)" % (uid, method.encode("utf-8"), args))
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._pending.pop(uid, None)

    # -- reading ---------------------------------------------------------

    async def serve(self) -> None:
        """Read and dispatch frames until the peer goes away.

        Before ``hello`` succeeds, frames are capped at `Limits.preauth_frame`,
        the peer has `Limits.hello_deadline` seconds, and anything but a
        call closes the connection (after an error reply where it has a uid).
        """
        deadline = asyncio.get_running_loop().call_later(
            self.limits.hello_deadline, self._expire
        )
        try:
            while True:
                cap = framing.MAX_WIRE if self.authed else self.limits.preauth_frame
                try:
                    msg = await framing.read_frame(self.reader, cap)
                except framing.BadMessage as e:
                    await self._bad_message(e)
                    if not self.authed:
                        break
                    continue
                if msg is None:
                    break
                if not await self._dispatch(msg):
                    break
        except (framing.FrameError, ConnectionError) as e:
            log.warning("connection lost: %s", e)
        except Exception:  # a peer's bytes must never end the server; log the bug
            log.exception("connection failed")
        finally:
            deadline.cancel()
            await self.close()

    def _expire(self) -> None:
        if not self.authed and not self.closed.is_set():
            log.warning("no hello within %.1f s: closing", self.limits.hello_deadline)
            self.writer.close()  # the reader sees the end of stream; serve() cleans up

    async def _bad_message(self, e: framing.BadMessage) -> None:
        log.warning("%.300s", e)
        m = _UID.match(e.text)
        if m:
            await self._send([_sym("epc-error"), int(m.group(1)), str(e)[:300]])

    async def _dispatch(self, msg: Any) -> bool:
        """Handle one message; False closes the connection."""
        if not isinstance(msg, list) or len(msg) < 2 or type(msg[1]) is not int:
            log.warning("malformed message of type %s", type(msg).__name__)
            return self.authed
        kind, uid = msg[0], msg[1]
        if kind == "call":
            return await self._on_call(uid, msg[2:])
        if not self.authed:
            # methods, returns and unknown kinds all wait for hello
            await self._reply_error(uid, "auth", "Not authenticated: first call must be hello")
            return False
        if kind == "methods":
            await self._arrive()
            await self._send([_sym("return"), uid, self._method_list()])
            return True
        if kind in ("return", "return-error", "epc-error"):
            fut = self._pending.get(uid)
            if fut is not None and not fut.done():
                if kind == "return":
                    fut.set_result(msg[2] if len(msg) > 2 else None)
                else:
                    fut.set_exception(RemoteError(str(msg[2] if len(msg) > 2 else kind)))
            return True
        await self._send([_sym("epc-error"), uid, f"unknown message kind {str(kind)[:50]}"])
        return True

    def _method_list(self) -> list[Any]:
        return [[_sym(name), "", spec.doc if spec else ""]
                for name, spec in sorted(self.methods.items())]

    async def _arrive(self) -> None:
        """Wait for the services and the whole table, when they are not here yet."""
        if self._services is not None:
            self.app, self.methods = await asyncio.shield(self._services)
            self._services = None

    def _token_ok(self, args: Any) -> bool:
        if not (isinstance(args, list) and len(args) == 1 and isinstance(args[0], dict)):
            return False
        given = args[0].get("token")
        if not isinstance(given, str):
            return False
        # As bytes: compare_digest refuses non-ASCII str with a TypeError.
        return hmac.compare_digest(
            given.encode("utf-8", "surrogatepass"), self.token.encode("utf-8", "surrogatepass")
        )

    async def _on_call(self, uid: int, rest: list[Any]) -> bool:
        name = rest[0] if rest and isinstance(rest[0], str) else ""
        args = rest[1] if len(rest) > 1 else None
        if not self.authed or name == "hello":
            # A hello after auth is checked again: a wrong token closes.
            if name != "hello" or not self._token_ok(args):
                why = "first call must be hello" if name != "hello" else "wrong or missing token"
                await self._reply_error(uid, "auth", f"Not authenticated: {why}")
                return False
            if not self.authed:
                self.authed = True
                if self.on_auth:
                    self.on_auth(self)
        name = str(name)
        task = asyncio.create_task(self._run_call(uid, name, args))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _run_call(self, uid: int, name: str, args: Any) -> None:
        CURRENT.set(self)
        try:
            value = await self._invoke(name, args)
            try:
                payload = framing.encode_payload([_sym("return"), uid, value])
            except sexp.SexpError as e:
                log.exception("unserialisable reply to %s", name)
                await self._reply_error(uid, "internal", f"{name}: reply not serialisable: {e}")
                return
            if len(payload) > framing.MAX_FRAME:
                marker = self.pages.hold(sexp.dumps(value))
                payload = framing.encode_payload([_sym("return"), uid, marker])
            await self._write(payload)
        except TandemError as e:
            await self._reply_error(uid, e.code, e.message, e.data, e.command)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # the server survives every handler failure
            log.exception("method %s failed", name)
            await self._reply_error(uid, "internal", f"{name}: {type(e).__name__}: {e}")

    async def _invoke(self, name: str, args: Any) -> Any:
        spec = self.methods.get(name)
        if spec is None and self._services is not None:
            await self._arrive()
            spec = self.methods.get(name)
        if spec is None:
            raise TandemError("no-such-method", f"No such method: {name}")
        # No arguments, or one empty plist (printed as nil or ()), mean {}.
        if args is None or args == [] or args == [None] or args == [[]]:
            raw: Any = {}
        elif isinstance(args, list) and len(args) == 1 and isinstance(args[0], dict):
            raw = args[0]
        else:
            raise TandemError("invalid", f"{name}: arguments must be one plist, got {args!r:.200}")
        try:
            params = spec.params.model_validate(raw)
        except ValidationError as e:
            raise TandemError("invalid", f"{name}: {describe_validation(e)}") from e
        value = await spec.handler(self.app, params)
        if spec.after_events and self.events_delivered is not None:
            # Bounded: a peer that stops taking events still gets its reply.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.events_delivered(), AFTER_EVENTS_WAIT)
        return value

    async def _reply_error(self, uid: int, code: str, message: str, data: Any = None,
                           command: str | None = None) -> None:
        try:
            await self._send([_sym("return-error"), uid, error_value(code, message, data, command)])
        except sexp.SexpError:
            await self._send([_sym("return-error"), uid, error_value(code, message, None, command)])

    async def close(self) -> None:
        """Close the socket and fail every call into Emacs still waiting."""
        if self.closed.is_set():
            return
        self.closed.set()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ConnectionClosed("connection closed"))
        for task in list(self._tasks):
            task.cancel()
        try:
            self.writer.close()
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass
