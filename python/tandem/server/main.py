"""``tandem serve``: the EPC server Emacs starts.

Contract with Emacs: the first line on stdout is the port, and nothing reaches
stdout or stderr before it (a stray warning breaks ``epc:start-epc``); so the
log goes to ``$TANDEM_HOME/logs/backend.log`` and warnings into the log, before
anything else is imported. The server exits when its stdin closes (Emacs, its
parent, went away) or on SIGTERM.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import logging
import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tandem import reaper, secrets
from tandem.paths import logs_dir, tandem_home
from tandem.server.limits import HeardProtocol, Limits, WaitingSlots
from tandem.store import fsutil

if TYPE_CHECKING:
    from tandem.app import App
    from tandem.protocol.base import MethodSpec
    from tandem.server.connection import Connection
    from tandem.server.pusher import EventPusher

log = logging.getLogger("tandem.server")

HANDOVER_TIMEOUT = 30.0
"""Seconds ``tandem serve`` waits for the token line on stdin."""

ACCEPT_BACKLOG = 128
"""Connections the kernel queues before the server accepts them (also how many one
accept round takes). Measured under a flood of new connections: 1024 made a real
client wait a second or more behind the queue; asyncio's default of 100 and 128
answer it in milliseconds, the flooder's own connects being slowed by the kernel."""

NEEDED_TO_SERVE = ("pydantic", "pydantic_core", "typing_extensions", "anyio", "httpx",
                   "httpx_sse", "msgspec")
"""Packages the services import at start, looked for (not imported) before the port line."""


def check_installed(names: tuple[str, ...] = NEEDED_TO_SERVE) -> None:
    """Raise ``ModuleNotFoundError`` (Python's own message) for the first of NAMES not installed.

    The services are imported after the port line; a Python without the backend's
    dependencies must still fail before it, as Emacs offers an install on that error.
    """
    for name in names:
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def setup_logging(home: Path) -> Path:
    """Send logs and warnings to ``HOME/logs/backend.log``; return its path."""
    folder = fsutil.private_dir(logs_dir(home))
    path = folder / "backend.log"
    # Created private before logging opens it (the log names paths and errors).
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, fsutil.PRIVATE_FILE_MODE))
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(os.environ.get("TANDEM_LOG_LEVEL", "INFO").upper())
    logging.captureWarnings(True)
    return path


def _watch_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    # A thread, because a pipe or terminal on stdin cannot always be added to
    # the event loop portably; reading returns b"" when Emacs goes away.
    try:
        while os.read(sys.stdin.fileno(), 65536):
            pass
    except (OSError, ValueError):
        pass
    loop.call_soon_threadsafe(stop.set)


async def serve(token: str, home: Path, port: int = 0, watch_stdin: bool = True) -> None:
    """Run the server until stdin closes or a signal arrives.

    The port is bound and printed first; then the services are built and the
    method table imported (most of the start-up). A client that connects in
    between is accepted and waits for them: its first message is read only
    once everything a request needs is ready (start-up).
    """
    check_installed()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    connections: set[Connection] = set()
    limits = Limits.from_env()
    ready: asyncio.Future[_Parts] = loop.create_future()
    waiting = WaitingSlots(limits.max_unauthenticated)
    """Connections that have not said hello, those accepted before the parts were ready too."""

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        transport = writer.transport
        # The oldest waiting peer gives way, so idle sockets can neither use up
        # our descriptors nor keep the real client out.
        if waiting.admit(transport) and waiting.dropped % 1000 == 1:  # a flood logs little
            log.warning("%d connections await hello: dropped the oldest for a new one"
                        " (%d so far)", len(waiting), waiting.dropped)
        try:
            try:
                parts = await asyncio.shield(ready)
            except asyncio.CancelledError:
                transport.abort()
                raise
            if transport.is_closing():  # dropped while the services were being built
                return

            def on_auth(conn: Connection) -> None:
                waiting.release(transport)
                parts.pusher.attach(conn)

            conn = parts.connection(reader, writer, parts.methods, parts.app, token,
                                    on_auth, limits)
            connections.add(conn)
            try:
                await conn.serve()
            finally:
                connections.discard(conn)
        finally:
            waiting.release(transport)

    def protocol() -> HeardProtocol:  # asyncio.start_server's, telling `waiting` who spoke
        return HeardProtocol(asyncio.StreamReader(limit=2**20), on_client, waiting)

    server = await loop.create_server(protocol, "127.0.0.1", port, backlog=ACCEPT_BACKLOG)
    bound = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"{bound}\n")
    sys.stdout.flush()
    if watch_stdin:
        threading.Thread(target=_watch_stdin, args=(loop, stop), daemon=True).start()
    async with server:
        try:
            parts = await _build(home)
        except BaseException:
            ready.cancel()  # the clients waiting are closed; the error ends the process
            raise
        ready.set_result(parts)
        log.info("serving on 127.0.0.1:%d with %d methods", bound, len(parts.methods))
        await stop.wait()
        log.info("stopping")
        for conn in list(connections):
            await conn.close()
        try:
            await parts.app.aclose()
        except Exception:
            log.exception("closing the services failed")


@dataclass(frozen=True)
class _Parts:
    """What a connection needs: the services, the method table, the event pusher."""

    app: App
    methods: dict[str, MethodSpec]
    pusher: EventPusher
    connection: type[Connection]
    """The `Connection` class (imported with the rest, after the port line)."""


async def _build(home: Path) -> _Parts:
    """Import and build the services and the method table; settle interrupted rewinds."""
    from tandem.app import App
    from tandem.server.connection import Connection
    from tandem.server.editor import EmacsEditor
    from tandem.server.pusher import EventPusher
    from tandem.server.table import build_table
    from tandem.turns.engine import run_blocking

    pusher = EventPusher()
    # ACP agents read and write files through the buffers of the connected Emacs.
    app = App(home=home, events=pusher, editor=EmacsEditor(lambda: pusher.connections))
    methods = build_table()
    # Before any client can start a turn: settle rewinds a crash interrupted.
    try:
        await run_blocking(app.rewinds.recover_all)
    except Exception:  # never keep the backend from starting; the next open retries
        log.exception("rewind crash recovery at start failed")
    # Everything imported so far lives as long as the process: keep it out
    # of the cyclic collector's scans, which large replies set off often.
    gc.collect()
    gc.freeze()
    return _Parts(app, methods, pusher, Connection)


def main(port: int = 0, watch_stdin: bool = True) -> int:
    """Entry point of ``tandem serve``; returns the exit status."""
    home = tandem_home()
    setup_logging(home)
    # The token comes on stdin (Emacs writes it), or from TANDEM_TOKEN, which
    # `tandem.secrets.bootstrap` has already moved out of the environment.
    token = secrets.get(secrets.TOKEN) or ""
    if not token and secrets.read_handover(sys.stdin.fileno(), HANDOVER_TIMEOUT):
        token = secrets.get(secrets.TOKEN) or ""
    if not token:
        log.error("no token was handed over")
        sys.stdout.write("error: no token: write {\"token\": …} as the first line on stdin"
                         " (Emacs does)\n")
        return 2
    swept = reaper.sweep_stale(home)
    if swept:
        log.warning("killed %d processes a dead backend had left running", swept)
    tracker = reaper.install(home)
    try:
        asyncio.run(serve(token, home, port, watch_stdin))
    finally:
        tracker.close()
    return 0
