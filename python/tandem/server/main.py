"""``tandem serve``: the EPC server Emacs starts.

Contract with Emacs: the first line on stdout is the port, and nothing reaches
stdout or stderr before it (a stray warning breaks ``epc:start-epc``); so the
log goes to ``$TANDEM_HOME/logs/backend.log`` and warnings into the log, before
anything else is imported. The server exits when its stdin closes (Emacs, its
parent, went away) or on SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
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
    from tandem.server.ask_socket import AskSocket
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

    The port is bound and printed first; then what ``hello`` needs is imported
    and a client's hello answered; the services are built and the rest of the
    method table imported after it (most of the start-up). A client that
    connects in between is accepted and waits for what its call needs: any
    call but ``hello``, ``ping``, ``page`` and ``doctor`` is read only once
    everything a request needs is ready, interrupted rewinds settled (start-up).
    """
    check_installed()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    connections: set[Connection] = set()
    limits = Limits.from_env()
    ready: asyncio.Future[_Greeter] = loop.create_future()
    services: asyncio.Future[tuple[App, dict[str, MethodSpec]]] = loop.create_future()
    greeted = asyncio.Event()
    """Set by the first hello: the services are built after its reply."""
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
                greeter = await asyncio.shield(ready)
            except asyncio.CancelledError:
                transport.abort()
                raise
            if transport.is_closing():  # dropped while the services were being built
                return

            def on_auth(conn: Connection) -> None:
                waiting.release(transport)
                conn.events_delivered = greeter.pusher.attach(conn)
                greeted.set()

            if services.done() and not services.cancelled():
                app, methods = services.result()
                conn = greeter.connection(reader, writer, methods, app, token, on_auth, limits)
            else:
                conn = greeter.connection(reader, writer, greeter.methods, greeter.early,
                                          token, on_auth, limits, services)
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
        app: App | None = None
        try:
            greeter = _greeter(home)
            ready.set_result(greeter)
            # The first hello is answered before the services' imports take the CPU;
            # with no client yet, they start after a short wait all the same.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(greeted.wait(), GREETING_GRACE)
            for _ in range(3):  # the hello's reply task runs and writes
                await asyncio.sleep(0)
            app, methods, asks = await _build(home, greeter.pusher)
        except BaseException:
            # the clients waiting are closed; the error ends the process
            ready.cancel()
            services.cancel()
            raise
        services.set_result((app, methods))
        log.info("serving on 127.0.0.1:%d with %d methods", bound, len(methods))
        await stop.wait()
        log.info("stopping")
        if asks is not None:
            await asks.close()
        for conn in list(connections):
            await conn.close()
        try:
            await app.aclose()
        except Exception:
            log.exception("closing the services failed")


GREETING_GRACE = 0.5
"""Seconds the services wait for a first hello before they are built without one."""


@dataclass(frozen=True)
class _Early:
    """What ``hello`` reads of the services before the App exists (`adapters.core.Served`)."""

    home: Path


@dataclass(frozen=True)
class _Greeter:
    """What a connection needs to answer ``hello`` before the services exist."""

    methods: dict[str, MethodSpec | None]
    """Every method's name; the spec of those ready now, None for the others."""
    early: _Early
    pusher: EventPusher
    connection: type[Connection]
    """The `Connection` class (imported after the port line)."""


def _greeter(home: Path) -> _Greeter:
    """Import what ``hello`` needs: the connection, the core methods, the pusher."""
    from tandem.server.connection import Connection
    from tandem.server.pusher import EventPusher
    from tandem.server.table import EARLY_APIS, METHOD_NAMES, build_table

    methods: dict[str, MethodSpec | None] = dict.fromkeys(METHOD_NAMES)
    methods.update(build_table(EARLY_APIS))
    return _Greeter(methods, _Early(home), EventPusher(), Connection)


def _import_services() -> None:
    from tandem.app import App  # noqa: F401
    from tandem.server.ask_socket import AskSocket  # noqa: F401
    from tandem.server.editor import EmacsEditor  # noqa: F401
    from tandem.server.table import build_table

    build_table()


async def _build(home: Path,
                 pusher: EventPusher) -> tuple[App, dict[str, MethodSpec], AskSocket | None]:
    """Import and build the services and the method table; settle interrupted rewinds;
    listen for ``tandem ask`` (unless another backend of HOME does)."""
    # Imported in a thread: a hello or ping on another connection is answered meanwhile.
    await asyncio.to_thread(_import_services)
    from tandem.app import App
    from tandem.server.ask_socket import AskSocket, Tee
    from tandem.server.editor import EmacsEditor
    from tandem.server.table import build_table
    from tandem.turns.engine import run_blocking

    # ACP agents read and write files through the buffers of the connected Emacs.
    # The events also go to a `tandem ask` watching its turn's session.
    tee = Tee(pusher)
    app = App(home=home, events=tee, editor=EmacsEditor(lambda: pusher.connections))
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
    asks: AskSocket | None = AskSocket(app, tee)
    try:
        if asks is not None and not await asks.start():
            asks = None
    except OSError:
        log.exception("no socket for tandem ask")  # it runs its turns in-process then
        asks = None
    return app, methods, asks


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
