"""Execute-capability tool: one shell command with a timeout and an output cap."""

from __future__ import annotations

import os
import signal
import subprocess

import anyio
from pydantic import Field

from tandem import reaper, secrets
from tandem.tools.base import Tool, ToolArgs, ToolContext, ToolError, cap_text


class ShellArgs(ToolArgs):
    """Arguments of ``shell``."""

    command: str = Field(description="A POSIX shell command, run in the workspace root")
    timeout: float | None = Field(
        default=None, gt=0, description="Seconds before the command is killed"
    )


def command_env() -> dict[str, str]:
    """The environment of a command the model runs: no secret (key, token), and
    the marker by which a stale-process sweep recognises it as ours."""
    env = secrets.child_env()
    env.update(reaper.tracker().owner_env())
    return env


def _kill_group(pid: int) -> None:
    # The command runs in its own session: killing the group also stops its children.
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def shell(ctx: ToolContext, args: ShellArgs) -> str:
    """Run COMMAND with ``/bin/sh -c`` in the root; stdout and stderr together, capped."""
    if not args.command.strip():
        raise ToolError("command must not be empty")
    timeout = min(args.timeout or ctx.shell_timeout, ctx.shell_timeout)
    ctx.ran_shell.append(args.command)
    kept = bytearray()
    dropped = 0
    timed_out = False
    proc = await anyio.open_process(
        ["/bin/sh", "-c", args.command],
        cwd=ctx.root,
        env=command_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    # Its group dies with the backend, even on kill -9 (tandem.reaper).
    tracker = reaper.tracker()
    tracker.register(proc.pid)
    ended = False
    try:
        assert proc.stdout is not None
        with anyio.move_on_after(timeout) as scope:
            async for chunk in proc.stdout:
                room = ctx.output_cap - len(kept)
                kept += chunk[: max(room, 0)]
                dropped += max(len(chunk) - max(room, 0), 0)
            await proc.wait()
        timed_out = scope.cancelled_caught
        ended = not timed_out
    finally:
        if not ended:
            # Timeout or cancel: the whole group goes, not only the shell
            # (a child may hold the output pipe after the shell exited).
            _kill_group(proc.pid)
        if proc.returncode is None:
            with anyio.CancelScope(shield=True):
                await proc.wait()
        await proc.aclose()
        tracker.release(proc.pid)
    text = kept.decode("utf-8", "replace").rstrip("\n")
    if dropped:
        text += f"\n[output truncated: {dropped} more bytes not shown]"
    if timed_out:
        text += f"\n[command killed after {timeout:g} s timeout]"
        raise ToolError(text.strip())
    text += f"\n[exit code {proc.returncode}]"
    if proc.returncode != 0:
        raise ToolError(text.strip())
    return cap_text(text.strip(), ctx.output_cap + 200)


SHELL_TOOLS = [
    Tool(
        "shell",
        "execute",
        "Run a shell command in the workspace root (stdout and stderr, with exit code).",
        ShellArgs,
        shell,
        lambda a: f"Run: {a.command[:80]}",
    ),
]
"""The execute-capability tools."""
