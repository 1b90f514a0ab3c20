"""One running MCP server for one session: start, list tools, call, stop.

A background task owns the transport and the SDK's `mcp.ClientSession`
(anyio context managers must be left in the task that entered them); calls
come from the turn's task. Every wait is bounded: a server that does not
answer ``initialize`` within `Timeouts.start`, a call that takes longer than
`Timeouts.call`, and a server that dies mid-call all end as `McpServerError`
naming the server, never as a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import mcp.types as types
from mcp.client.streamable_http import streamable_http_client

from mcp import ClientSession
from tandem.config.model import McpHttpServer
from tandem.mcp.common import McpServerError, Timeouts, too_large
from tandem.mcp.servers import ServerConfig, fingerprint
from tandem.mcp.transport import http_client, process_streams, start_process
from tandem.providers.acp_process import AgentProcess

log = logging.getLogger(__name__)

Status = Literal["stopped", "starting", "running", "failed", "exited"]
MAX_TOOLS = 1000
"""Tools taken from one server (pages of ``tools/list`` are followed up to this)."""
LOG_LINES = 200


class McpConnection:
    """The client side of one MCP server (see the module docstring)."""

    def __init__(self, name: str, config: ServerConfig, root: Path,
                 timeouts: Timeouts | None = None) -> None:
        self.name = name
        self.config = config
        self.fingerprint = fingerprint(config)
        self.root = root
        self.timeouts = timeouts or Timeouts()
        self.status: Status = "stopped"
        self.error: str | None = None
        self.tools: list[types.Tool] = []
        self.log: deque[str] = deque(maxlen=LOG_LINES)
        self._session: ClientSession | None = None
        self._process: AgentProcess | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        self._overflow: asyncio.Future[None] | None = None
        """Set when a message went past the limit: what waits for an answer fails."""

    # -- life cycle -------------------------------------------------------

    async def ensure_started(self) -> None:
        """Start the server unless it runs; McpServerError when it cannot."""
        async with self._lock:
            if self.running:
                return
            await self._stop_task()
            await self._start()

    @property
    def running(self) -> bool:
        """Whether the server is up and its session open."""
        if self.status == "running" and self._process is not None and not self._process.alive:
            self.status, self.error = "exited", self._process.describe_exit()
            self._note(f"server {self.error}")
        return self.status == "running"

    async def _start(self) -> None:
        self.status, self.error = "starting", None
        self._stop = asyncio.Event()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._note("starting")
        self._task = asyncio.create_task(self._run(ready), name=f"mcp-{self.name}")
        overflow = self._overflow = asyncio.get_running_loop().create_future()
        await asyncio.wait({ready, overflow}, timeout=self.timeouts.start,
                           return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            await self._fail(too_large() if overflow.done()
                             else f"did not start within {self.timeouts.start:g} s")
        elif (exc := ready.exception()) is not None:
            await self._fail(await self._exit_report() or str(exc))
        self.status = "running"
        self._note(f"running, {len(self.tools)} tools")

    async def _fail(self, why: str) -> None:
        tail = self._process.stderr_tail() if self._process is not None else ""
        if "stderr:" in why:
            tail = ""  # an exit report carries it already
        await self._stop_task(grace=0.0)
        self.status, self.error = "failed", why + (f"; stderr:\n{tail}" if tail else "")
        self._note(f"failed: {self.error}")
        raise McpServerError(f"MCP server {self.name} {self.error}")

    async def _run(self, ready: asyncio.Future[None]) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                if isinstance(self.config, McpHttpServer):
                    client = await stack.enter_async_context(
                        http_client(self.config, self.timeouts.start, self._overflowed))
                    read, write, _ = await stack.enter_async_context(
                        streamable_http_client(self.config.url, http_client=client))
                else:
                    try:
                        self._process = await start_process(self.config, self.root)
                    except OSError as exc:
                        raise McpServerError(f"could not start: {exc.strerror or exc}") from None
                    stack.push_async_callback(self._process.stop)
                    read, write = await stack.enter_async_context(
                        process_streams(self._process, self._overflowed))
                session = await stack.enter_async_context(
                    ClientSession(read, write, logging_callback=self._on_log))
                await session.initialize()
                self.tools = await _list_tools(session)
                self._session = session
                ready.set_result(None)
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - any failure ends as a named status
            why = _reason(exc)
            if not ready.done():
                ready.set_exception(McpServerError(why))
            else:
                self.status, self.error = "exited", why
                self._note(f"connection ended: {why}")
        finally:
            self._session = None

    def _overflowed(self) -> None:
        self._note(too_large())
        if self._overflow is not None and not self._overflow.done():
            self._overflow.set_result(None)

    async def stop(self) -> None:
        """Stop the server (and its process group) and forget its session."""
        async with self._lock:
            await self._stop_task()
            if self.status in ("running", "starting"):
                self.status = "stopped"
            self._note("stopped")

    async def _stop_task(self, grace: float = 5.0) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        try:
            if grace <= 0:
                raise TimeoutError
            await asyncio.wait_for(asyncio.shield(task), grace)
        except (TimeoutError, Exception):  # noqa: BLE001 - stopping is best effort
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        if self._process is not None:
            await self._process.stop()  # already done by the stack, unless cancelled
            self._process = None

    # -- calls ------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, object]) -> types.CallToolResult:
        """Run TOOL with ARGUMENTS; McpServerError when the server cannot answer."""
        session, task = self._session, self._task
        if session is None or task is None or not self.running:
            raise McpServerError(f"MCP server {self.name} is not running"
                                 + (f" ({self.error})" if self.error else ""))
        limit = self.timeouts.call
        started = time.monotonic()
        request = asyncio.ensure_future(
            session.call_tool(tool, arguments, read_timeout_seconds=timedelta(seconds=limit)))
        overflow = self._overflow = asyncio.get_running_loop().create_future()
        watch: set[asyncio.Future[Any]] = {request, task, overflow}
        if self._process is not None:
            watch.add(self._process.exited)
        try:
            await asyncio.wait(watch, timeout=limit + 1, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not request.done():
                request.cancel()
                with contextlib.suppress(BaseException):
                    await request
        if request.done() and not request.cancelled() and request.exception() is None:
            return request.result()
        if overflow.done():  # its answer was dropped as it arrived; the server goes on
            raise McpServerError(f"MCP server {self.name}: {tool}: {too_large()}")
        # "Connection closed" may arrive just before the exit is seen: look again.
        report = await self._exit_report()
        if report is not None:
            self.status, self.error = "exited", report
            self._note(f"died during {tool}: {report}")
            raise McpServerError(f"MCP server {self.name} died during {tool}: {report}")
        if request.done() and not request.cancelled():
            why = _reason(request.exception() or RuntimeError("no answer"))
            if "timed out" in why.lower() or time.monotonic() - started >= limit:
                why = f"timed out after {limit:g} s"
            self._note(f"{tool} failed: {why}")
            raise McpServerError(f"MCP server {self.name}: {tool} {why}")
        why = self.error or f"timed out after {limit:g} s"
        self._note(f"{tool}: {why}")
        raise McpServerError(f"MCP server {self.name}: {tool} {why}")

    async def _exit_report(self) -> str | None:
        if self._process is None:
            return None
        report = await self._process.exit_report(1.0)
        return report.replace("agent process", "its process", 1) if report else None

    # -- log --------------------------------------------------------------

    def log_lines(self) -> list[str]:
        """What happened to this server, and its stderr tail."""
        tail = self._process.stderr_tail() if self._process is not None else ""
        return [*self.log, *(f"stderr: {line}" for line in tail.splitlines() if line)]

    def _note(self, text: str) -> None:
        self.log.append(f"{time.strftime('%H:%M:%S')} {text}")
        log.info("mcp %s: %s", self.name, text)

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self._note(f"[{params.level}] {str(params.data)[:2000]}")


async def _list_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    while len(tools) < MAX_TOOLS:
        page = await session.list_tools(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.nextCursor
        if not cursor:
            break
    return tools[:MAX_TOOLS]


def _reason(exc: BaseException) -> str:
    """A one-line reason out of EXC (task groups wrap the real error)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, McpServerError):
        return str(exc)
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text
