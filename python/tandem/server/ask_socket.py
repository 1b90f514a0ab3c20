"""The private socket ``tandem ask`` uses to run its turn in this backend.

`tandem.ask_client` is the other side (the paths, the JSON lines). Whatever
connects is untrusted until it has sent the token: the first line is read
with a size cap and a deadline, the peer must be this user (``SO_PEERCRED``),
the token must match, and the request's fields are checked one by one;
anything else is refused and closed, before a session is touched.

The turn runs as `tandem.ask.run_turn` runs it in-process, with the output
sent back as lines: so what the terminal shows is the same, and Emacs, if it
shows that session, sees the turn as its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import json
import logging
import os
import secrets
import socket
import stat
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from tandem.ask import AskRequest, Lines, StdoutSink, asker_through, run_turn
from tandem.ask_client import MAX_LINE, PROTOCOL, private_folder_ok, socket_paths
from tandem.events import EventSink
from tandem.protocol.base import TandemError
from tandem.protocol.errors import shell_text
from tandem.protocol.events import AnyEvent
from tandem.providers.base import PermissionAnswer, PermissionRequest

if TYPE_CHECKING:
    from tandem.app import App

log = logging.getLogger("tandem.server")

FIRST_LINE_TIMEOUT = 10.0
"""Seconds a peer has to send its token and request."""

_FIELDS: dict[str, tuple[type, ...]] = {
    "prompt": (str,), "cwd": (str,), "session": (str, type(None)),
    "provider": (str, type(None)), "permission_mode": (str, type(None)),
    "json": (bool,), "tty": (bool,),
}
_ANSWERS = ("allow_once", "allow_session", "reject")


class Tee:
    """The backend's event sink, also showing one session's events to a ``tandem ask``."""

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.watchers: dict[str, list[StdoutSink]] = {}

    def publish(self, session: str, event: AnyEvent) -> None:
        """Publish EVENT to the backend's sink and to SESSION's watchers."""
        self.sink.publish(session, event)
        for watcher in self.watchers.get(session, ()):
            watcher.publish(session, event)

    @contextlib.contextmanager
    def watch(self, session: str, sink: StdoutSink) -> Iterator[StdoutSink]:
        """SINK sees SESSION's events inside the block."""
        self.watchers.setdefault(session, []).append(sink)
        try:
            yield sink
        finally:
            left = self.watchers.get(session, [])
            if sink in left:
                left.remove(sink)
            if not left:
                self.watchers.pop(session, None)


def _request(first: bytes, token: str) -> tuple[AskRequest, bool] | str:
    """The request of FIRST (the peer's first line) and whether its terminal may be
    asked, or why it is refused."""
    try:
        msg = json.loads(first)
    except ValueError:
        return "not JSON"
    if not isinstance(msg, dict) or msg.get("protocol") != PROTOCOL:
        return "another protocol"
    given = msg.get("token")
    if not isinstance(given, str) or not hmac.compare_digest(
            given.encode("utf-8", "surrogatepass"), token.encode()):
        return "wrong token"
    ask = msg.get("ask")
    if not isinstance(ask, dict) or set(ask) != set(_FIELDS):
        return "malformed request"
    for key, types in _FIELDS.items():
        if type(ask[key]) not in types:
            return f"malformed request ({key})"
    if not os.path.isabs(ask["cwd"]):
        return "malformed request (cwd)"
    return AskRequest(prompt=ask["prompt"], cwd=ask["cwd"], session=ask["session"],
                      provider=ask["provider"], permission_mode=ask["permission_mode"],
                      json=ask["json"]), ask["tty"]


def _same_user(sock: socket.socket | None) -> bool:
    if sock is None:
        return False
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):  # no SO_PEERCRED: the 0700 folder is the guard
        return True
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


class AskSocket:
    """Serve ``tandem ask`` turns of one App on this user's private socket."""

    def __init__(self, app: App, tee: Tee) -> None:
        self.app = app
        self.tee = tee
        self.token = secrets.token_urlsafe(32)
        self.path, self.token_path = socket_paths(app.home)
        self.server: asyncio.AbstractServer | None = None
        self._inode: int | None = None

    async def start(self) -> bool:
        """Listen, unless another live backend of this home does; whether we listen."""
        folder = self.path.parent
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError:
            return False
        if not private_folder_ok(folder):
            log.warning("%s is not a private folder of ours: no ask socket", folder)
            return False
        if await _answers(self.path):
            log.info("another backend serves %s", self.path)
            return False
        await _sweep(folder, self.path)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a dead backend's
        old = os.umask(0o177)
        try:
            self.server = await asyncio.start_unix_server(self._on_peer, str(self.path),
                                                          limit=MAX_LINE)
        finally:
            os.umask(old)
        self._inode = os.stat(self.path).st_ino
        tmp = self.token_path.with_name(self.token_path.name + f".{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.token + "\n")
        os.replace(tmp, self.token_path)
        log.info("tandem ask socket at %s", self.path)
        return True

    async def close(self) -> None:
        """Stop listening; remove the socket and token if they are still ours."""
        if self.server is None:
            return
        self.server.close()
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:
                self.path.unlink()
                if self.token_path.read_text().strip() == self.token:
                    self.token_path.unlink()
        await self.server.wait_closed()

    async def _on_peer(self, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> None:
        try:
            await self._serve_peer(reader, writer)
        except (ConnectionError, OSError):
            pass
        except Exception:
            log.exception("tandem ask connection failed")
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _serve_peer(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        def send(msg: dict[str, object]) -> None:
            writer.write(json.dumps(msg).encode() + b"\n")

        if not _same_user(writer.get_extra_info("socket")):
            return
        try:
            first = await asyncio.wait_for(reader.readuntil(b"\n"), FIRST_LINE_TIMEOUT)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            return
        taken = _request(first, self.token)
        if isinstance(taken, str):
            log.warning("tandem ask refused: %s", taken)
            send({"refused": taken})
            await writer.drain()
            return
        req, tty = taken
        send({"accepted": True})
        answers: asyncio.Queue[PermissionAnswer | None] = asyncio.Queue()
        gone = asyncio.Event()

        async def read_answers() -> None:
            try:
                while line := await reader.readuntil(b"\n"):
                    msg = json.loads(line)
                    answer = msg.get("answer") if isinstance(msg, dict) else None
                    await answers.put(answer if answer in _ANSWERS else None)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError,
                    ConnectionError):
                pass
            gone.set()
            await answers.put(None)

        async def put(request: PermissionRequest) -> PermissionAnswer | None:
            send({"ask": {"tool": request.tool, "title": request.title,
                          "once_only": request.once_only}})
            return await answers.get()

        lines = Lines(lambda text: send({"out": text}), lambda text: send({"err": text}))
        sink = StdoutSink(show=True, lines=lines)
        listening = asyncio.create_task(read_answers())
        turn = asyncio.create_task(run_turn(
            self.app, req, lines, asker_through(lines, tty, put),
            lambda sid: self.tee.watch(sid, sink), own=False))
        try:
            waiter = asyncio.create_task(gone.wait())
            await asyncio.wait({turn, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if not turn.done():  # the terminal went away (C-c): the turn is cancelled
                turn.cancel()
            try:
                status = await turn
            except asyncio.CancelledError:
                status = 130
            except TandemError as e:
                lines.say(shell_text(e))
                status = 1
            send({"exit": status})
            await writer.drain()
        finally:
            listening.cancel()


STALE_AFTER = 60.0
"""Seconds after which a socket nobody answers is a dead backend's (a live one binds and
listens in one step, then writes its token)."""

SWEEP_MAX = 200
"""Sockets of other state roots looked at per start: a crowded folder costs little."""


async def _sweep(folder: Path, mine: Path) -> None:
    """Remove the sockets (and tokens) of dead backends of other state roots in FOLDER.

    A backend Emacs stopped was killed (``delete-process``) and could not
    remove its own; each state root has one name, so without this only test
    runs, with a state root each, would pile them up.
    """
    now = time.time()
    for sock in sorted(folder.glob("ask-*.sock"))[:SWEEP_MAX]:
        if sock == mine:
            continue
        try:
            st = os.lstat(sock)
        except OSError:
            continue
        if not stat.S_ISSOCK(st.st_mode) or now - st.st_mtime < STALE_AFTER:
            continue
        if not await _answers(sock):
            with contextlib.suppress(OSError):
                sock.unlink()
            with contextlib.suppress(OSError):
                sock.with_suffix(".token").unlink()


async def _answers(path: Path) -> bool:
    """Whether a live server listens on PATH."""
    try:
        _r, w = await asyncio.wait_for(asyncio.open_unix_connection(str(path)), 2)
    except (TimeoutError, OSError) as e:
        if isinstance(e, OSError) and e.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            log.info("ask socket %s: %s", path, e)
        return False
    w.close()
    return True
