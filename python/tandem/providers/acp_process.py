"""An ACP agent's operating-system process: environment, spawn, stderr, stop.

The agent runs in its own process group so that stopping it also stops the
helpers it starts (the Claude Code adapter starts one CLI process per ACP
session). Its stderr is drained continuously (a full pipe would block the
agent) and its tail is kept for error messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tandem import reaper, secrets

log = logging.getLogger(__name__)

INHERITED_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TMPDIR",
    "TZ",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
)
"""Variables an agent inherits from the backend; everything else must be configured.

No key is among them (keys are not in the backend's environment at all:
`tandem.secrets`); an agent gets only its own vendor's key (`OWN_KEYS`).
``IS_SANDBOX`` is deliberately absent: inherited as root, it makes the Claude
Code adapter ask for bypass mode, which its CLI then refuses.
"""

OWN_KEYS: dict[str, tuple[str, ...]] = {
    "claude-agent-acp": ("ANTHROPIC_API_KEY",),
    "claude-code-acp": ("ANTHROPIC_API_KEY",),
    "codex-acp": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
"""The keys a known agent program gets from the user's keys, when the user has one."""

INHERITED_PREFIXES = ("LC_", "XDG_")

STDERR_TAIL_LINES = 40
STDERR_LINE_CHARS = 2000
STREAM_LIMIT = 50 * 1024 * 1024
"""Largest JSON-RPC line accepted from the agent (file contents travel inline)."""


def agent_environment(
    configured: Mapping[str, str],
    base: Mapping[str, str] | None = None,
    command: Sequence[str] = (),
    keys: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of an agent: an allow-list from BASE, its own key, CONFIGURED.

    BASE defaults to the backend's own environment, KEYS to the user's keys
    (`tandem.secrets`). From KEYS the agent gets only what `OWN_KEYS` lists
    for its program (COMMAND's first word). CONFIGURED (the agent's ``env``
    setting) wins over both. No other secret is ever passed on.
    """
    source = os.environ if base is None else base
    env = {
        key: value
        for key, value in source.items()
        if (key in INHERITED_ENV or key.startswith(INHERITED_PREFIXES))
        and not secrets.is_secret_name(key)
    }
    held = secrets.secrets() if keys is None else keys
    program = os.path.basename(command[0]) if command else ""
    for name in OWN_KEYS.get(program, ()):
        if held.get(name):
            env[name] = held[name]
    env.update(configured)
    env.update(reaper.tracker().owner_env())
    return env


def living_group_members(pgid: int) -> list[int]:
    """Processes of group PGID that still run (zombies excluded), from /proc."""
    return reaper.living_groups().get(pgid, [])


class AgentProcess:
    """One running agent process with its stdio pipes.

    Create it with `AgentProcess.start`; `stop` ends it and its process group.
    """

    def __init__(self, proc: asyncio.subprocess.Process, argv: Sequence[str]) -> None:
        self.proc = proc
        self.argv = list(argv)
        self.pid = proc.pid
        self._tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_task = asyncio.create_task(self._drain_stderr(), name="acp-stderr")
        self.exited: asyncio.Task[int] = asyncio.create_task(proc.wait(), name="acp-wait")

    @classmethod
    async def start(cls, argv: Sequence[str], env: Mapping[str, str], cwd: Path,
                    limit: int = STREAM_LIMIT) -> AgentProcess:
        """Spawn ARGV in CWD with exactly ENV; raises OSError when it cannot start.

        LIMIT bounds a line read with ``readline`` and the bytes buffered before
        reading pauses (twice LIMIT).
        """
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(cwd),
            env=dict(env),
            start_new_session=True,
            limit=limit,
        )
        # Its group dies with the backend, even on kill -9 (tandem.reaper).
        reaper.tracker().register(proc.pid)
        return cls(proc, argv)

    @property
    def stdin(self) -> asyncio.StreamWriter:
        """The agent's input (our JSON-RPC output)."""
        assert self.proc.stdin is not None
        return self.proc.stdin

    @property
    def stdout(self) -> asyncio.StreamReader:
        """The agent's output (our JSON-RPC input)."""
        assert self.proc.stdout is not None
        return self.proc.stdout

    @property
    def alive(self) -> bool:
        """Whether the process has not exited yet."""
        return not self.exited.done()

    def stderr_tail(self) -> str:
        """The last lines the agent wrote to stderr."""
        return "\n".join(self._tail)

    def describe_exit(self) -> str:
        """A message for a process that exited: code or signal, and the stderr tail."""
        code = self.proc.returncode
        how = (
            f"was killed by signal {-code}" if code is not None and code < 0 else f"exited ({code})"
        )
        tail = self.stderr_tail()
        return f"agent process {how}" + (f"; stderr:\n{tail}" if tail else "")

    async def exit_report(self, timeout: float = 2.0) -> str | None:
        """`describe_exit` once the process has exited (waiting up to TIMEOUT for
        the exit and the rest of its stderr); None while it still runs."""
        ends: set[asyncio.Future[Any]] = {self.exited}
        await asyncio.wait(ends, timeout=timeout)
        if self.alive:
            return None
        # Pipes close when the process exits, unless a child inherited stderr.
        await asyncio.wait({self._stderr_task}, timeout=0.5)
        return self.describe_exit()

    async def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        pending = b""
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._keep(line)
            if len(pending) > STDERR_LINE_CHARS * 4:
                # A line with no end in sight: keep its start, drop the rest.
                self._keep(pending)
                pending = b""
        if pending:
            self._keep(pending)

    def _keep(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if not text.strip():
            return
        log.debug("agent %s stderr: %s", self.pid, text)
        self._tail.append(text[:STDERR_LINE_CHARS])

    async def stop(self, grace: float = 2.0) -> None:
        """End the agent: close stdin, then SIGTERM, then SIGKILL its process group.

        The group is signalled even after the leader exited, so that helpers
        it started do not outlive it.
        """
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            with contextlib.suppress(Exception):
                self.proc.stdin.close()
        if self.alive:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.exited), grace / 2)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not self._group_alive():
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)
            await self._wait_group(grace)
        with contextlib.suppress(Exception):
            await self.exited
        reaper.tracker().release(self.pid)
        self._stderr_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._stderr_task

    def _group_alive(self) -> bool:
        if Path("/proc/self/stat").exists():
            return bool(living_group_members(self.pid))
        try:
            os.killpg(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    async def _wait_group(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            if not self._group_alive() and not self.alive:
                return
            await asyncio.sleep(0.05)
