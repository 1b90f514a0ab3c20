"""The ACP client's terminals: ``terminal/create``, ``output``, ``wait_for_exit``,
``kill`` and ``release``, run by the backend.

A terminal is one command run the way the native ``shell`` tool runs one
(`tandem.tools.shell`): in the workspace root (or a folder inside it), in its
own process group registered with the reaper, with the scrubbed environment
of `command_env` (the agent's variables are added, secrets never), stdin
closed, and a time limit after which the whole group is killed. Its output
(stdout and stderr together) is kept up to a byte limit, the agent's or
tandem's cap whichever is smaller, dropping the oldest bytes as ACP asks.
Whether a terminal may start at all (permission) is the turn's decision
(`AcpTurn.allow_terminal`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tandem import reaper, secrets
from tandem.tools.base import ToolError
from tandem.tools.paths import resolve_in_root
from tandem.tools.shell import command_env

OUTPUT_CAP = 64 * 1024
"""Bytes of output a terminal keeps at most (the native shell tool's cap)."""
TERMINAL_TIMEOUT = 120.0
"""Seconds a terminal's command may run before its group is killed (as ``shell``)."""
MAX_TERMINALS = 16
"""Terminals one agent may hold at once (created and not released)."""


class TerminalRefused(Exception):
    """A terminal request the client will not do; the message says why."""


@dataclass
class ExitStatus:
    """How a terminal's command ended: its exit code, or the signal that killed it."""

    exit_code: int | None
    signal: str | None


def _kept(data: bytearray, limit: int) -> tuple[bytes, bool]:
    """The last LIMIT bytes of DATA, starting on a UTF-8 character; whether cut."""
    if len(data) <= limit:
        return bytes(data), False
    tail = bytes(data[len(data) - limit :])
    start = 0
    while start < len(tail) and start < 4 and (tail[start] & 0xC0) == 0x80:
        start += 1  # a continuation byte: the character began in the dropped part
    return tail[start:], True


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Terminal:
    """One running (or finished) terminal command."""

    def __init__(self, terminal_id: str, proc: asyncio.subprocess.Process, limit: int,
                 timeout: float, title: str) -> None:
        self.id = terminal_id
        self.proc = proc
        self.limit = limit
        self.title = title
        self.timed_out = False
        self.timeout_s = timeout
        self._data = bytearray()
        self._dropped = False
        self._reader = asyncio.create_task(self._read(), name=f"acp-terminal-{terminal_id}")
        self.exited: asyncio.Task[int] = asyncio.create_task(proc.wait(), name="acp-terminal-wait")
        self._watchdog = asyncio.get_running_loop().call_later(timeout, self._time_out)

    async def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while chunk := await stream.read(65536):
            self._data += chunk
            if len(self._data) > 2 * self.limit:
                # Keep memory bounded: only the last LIMIT bytes are ever shown.
                del self._data[: len(self._data) - self.limit]
                self._dropped = True

    def _time_out(self) -> None:
        if not self.exited.done():
            self.timed_out = True
            self.kill()

    def output(self) -> tuple[str, bool]:
        """The output kept so far and whether older output was dropped."""
        data, cut = _kept(self._data, self.limit)
        return data.decode("utf-8", "replace"), cut or self._dropped

    def status(self) -> ExitStatus | None:
        """The exit status once the command ended (None while it runs)."""
        code = self.proc.returncode
        if code is None:
            return None
        if code < 0:
            return ExitStatus(exit_code=None, signal=_signal_name(code))
        return ExitStatus(exit_code=code, signal=None)

    async def wait(self) -> ExitStatus:
        """Wait for the command to end, then for its output to be read."""
        await asyncio.shield(self.exited)
        with contextlib.suppress(asyncio.TimeoutError):
            # A child holding the pipe open must not keep the answer back.
            await asyncio.wait_for(asyncio.shield(self._reader), 0.5)
        status = self.status()
        assert status is not None
        return status

    def kill(self) -> None:
        """Kill the command's whole process group (the terminal stays readable)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    async def release(self) -> None:
        """Kill what still runs and free everything the terminal holds."""
        self._watchdog.cancel()
        self.kill()
        with contextlib.suppress(Exception):
            await self.exited
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        reaper.tracker().release(self.proc.pid)


def _env(extra: Sequence[tuple[str, str]]) -> dict[str, str]:
    env = command_env()
    for name, value in extra:
        if name and "=" not in name and "\x00" not in name + value:
            if not secrets.is_secret_name(name) and name not in env:
                env[name] = value
    return env


class Terminals:
    """The terminals of one agent process, by id."""

    def __init__(self, cap: int = OUTPUT_CAP, timeout: float = TERMINAL_TIMEOUT) -> None:
        self.cap = cap
        self.timeout = timeout
        self._live: dict[str, Terminal] = {}
        self._ids = itertools.count(1)

    async def create(self, root: Path, command: str, args: Sequence[str] | None = None,
                     env: Mapping[str, str] | Sequence[tuple[str, str]] = (),
                     cwd: str | None = None, limit: int | None = None) -> Terminal:
        """Start COMMAND (with ARGS; without, a shell command line) in ROOT or CWD."""
        if not command.strip() or "\x00" in command:
            raise TerminalRefused("the command must be a non-empty string")
        if len(self._live) >= MAX_TERMINALS:
            raise TerminalRefused(f"{MAX_TERMINALS} terminals are open: release one first")
        try:
            where = resolve_in_root(root, cwd) if cwd else resolve_in_root(root, ".")
        except ToolError as exc:
            raise TerminalRefused(str(exc)) from None
        if not where.is_dir():
            raise TerminalRefused(f"{cwd}: not a folder")
        argv = [command, *args] if args else ["/bin/sh", "-c", command]
        pairs = list(env.items()) if isinstance(env, Mapping) else list(env)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=str(where), env=_env(pairs), stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
                start_new_session=True)
        except OSError as exc:
            raise TerminalRefused(f"cannot run {command}: {exc.strerror or exc}") from None
        # Its group dies with the backend, even on kill -9 (tandem.reaper).
        reaper.tracker().register(proc.pid)
        cap = self.cap if limit is None else max(min(limit, self.cap), 0)
        terminal = Terminal(f"term-{next(self._ids)}", proc, cap, self.timeout,
                            " ".join([command, *(args or [])]))
        self._live[terminal.id] = terminal
        return terminal

    def get(self, terminal_id: str) -> Terminal:
        """The terminal TERMINAL_ID; `TerminalRefused` when there is none (released?)."""
        terminal = self._live.get(terminal_id)
        if terminal is None:
            raise TerminalRefused(f"no terminal {terminal_id!r} (released, or never created)")
        return terminal

    async def release(self, terminal_id: str) -> None:
        """Kill and forget TERMINAL_ID."""
        terminal = self._live.pop(terminal_id, None)
        if terminal is None:
            raise TerminalRefused(f"no terminal {terminal_id!r} (released, or never created)")
        await terminal.release()

    async def close(self) -> None:
        """Release every terminal (the agent stopped)."""
        live, self._live = list(self._live.values()), {}
        for terminal in live:
            await terminal.release()
