"""Best-of-N: one request sent to N new parallel sessions, and each tree's test run.

A group is ``$TANDEM_HOME/parallel/groups/<group>.json``: the request, and
per result its session, provider, model, mode, turn, how the turn ended, its
answer's first characters and its test's outcome. `run_test` runs the
user's test command in a tree: tandem's scrubbed environment (no secret), no
input, its own process group (killed whole at the timeout, and registered
with the reaper so that it dies with the backend), the whole output
in ``$TANDEM_HOME/parallel/tests/<session>.log`` and its tail in the reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

from pydantic import ValidationError

from tandem import reaper, secrets
from tandem.protocol.base import TandemError
from tandem.protocol.parallel import BestOf, ParallelTestResult
from tandem.store.fsutil import atomic_write

TEST_OUTPUT_CHARS = 16_000
"""How much of a test's output (its end) a reply carries; the log keeps it all."""
ANSWER_CHARS = 2_000
"""How much of each result's answer a group keeps (the compare view shows its first lines)."""
LOG_BYTES = 8 * 1024 * 1024
"""A test's log keeps at most this much output (its start); the rest is counted only."""


def groups_folder(home: Path) -> Path:
    """Where best-of-N groups are kept."""
    return home / "parallel" / "groups"


def _group_path(home: Path, group: str) -> Path:
    if not group or "/" in group or group.startswith("."):
        raise TandemError("invalid", f"not a group id: {group!r}")
    return groups_folder(home) / f"{group}.json"


def write_group(home: Path, group: BestOf) -> None:
    """Write GROUP (temp file, fsync, rename)."""
    groups_folder(home).mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(_group_path(home, group.group), group.model_dump_json(indent=1).encode())


def read_group(home: Path, group: str) -> BestOf:
    """GROUP as kept, or ``not-found``."""
    try:
        return BestOf.model_validate_json(_group_path(home, group).read_bytes())
    except (OSError, ValidationError) as e:
        raise TandemError("not-found", f"No best-of group {group}") from e


async def run_test(home: Path, session: str, tree: Path, command: list[str],
                   timeout: float) -> ParallelTestResult:
    """Run COMMAND in TREE (SESSION's), at most TIMEOUT seconds; its outcome."""
    logs = home / "parallel" / "tests"
    logs.mkdir(parents=True, exist_ok=True, mode=0o700)
    log = logs / f"{session}.log"
    start = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *command, cwd=tree, env={**secrets.child_env(), **reaper.tracker().owner_env()},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True)
    except OSError as e:
        return ParallelTestResult(session=session, command=command, exit_status=127,
                                  output=f"cannot run {command[0]}: {e.strerror}")
    # Its group dies with the backend, as a tool shell's does.
    reaper.tracker().register(proc.pid)
    kept = bytearray()
    total = 0

    async def drain() -> None:
        nonlocal total
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            total += len(chunk)
            room = LOG_BYTES - len(kept)
            if room > 0:
                kept.extend(chunk[:room])
        await proc.wait()

    timed_out = False
    try:
        await asyncio.wait_for(drain(), timeout)
    except TimeoutError:
        timed_out = True
        # The whole group: a test runner's children die with it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
    finally:
        if proc.returncode is None:  # cancelled: leave nothing running
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        reaper.tracker().release(proc.pid)
    text = kept.decode("utf-8", "replace")
    if total > len(kept):
        text += f"\n[{total - len(kept)} more bytes of output not kept]\n"
    if timed_out:
        text += f"\n[killed after {timeout:g} s]\n"
    atomic_write(log, text.encode())
    return ParallelTestResult(
        session=session, command=command,
        exit_status=None if timed_out else proc.returncode, timed_out=timed_out,
        seconds=round(time.monotonic() - start, 3), output=text[-TEST_OUTPUT_CHARS:],
        truncated=len(text) > TEST_OUTPUT_CHARS, log=str(log))
