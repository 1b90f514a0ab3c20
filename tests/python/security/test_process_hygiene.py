"""Tool processes die with the backend: a kill -9 takes its shells and their children along."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from tandem import reaper
from tandem.tools.base import ToolContext, ToolError
from tandem.tools.shell import ShellArgs, shell

REPO = Path(__file__).resolve().parents[3]

# A process that runs one shell tool call with the tracker installed as
# `tandem serve` installs it (the same through a real backend and a model:
# tests/elisp/tandem-security-tests.el).
RUNNER = r"""
import asyncio, sys
from pathlib import Path
from tandem import reaper
from tandem.tools.base import ToolContext
from tandem.tools.shell import ShellArgs, shell
reaper.install(Path(sys.argv[1]))
async def main():
    call = shell(ToolContext(root=Path(sys.argv[2])), ShellArgs(command=sys.argv[3]))
    task = asyncio.create_task(call)
    await asyncio.sleep(0.5)
    print("running", flush=True)
    await task
asyncio.run(main())
"""


def _alive(pid: int) -> bool:
    """Whether PID runs (a zombie does not)."""
    return any(pid in members for members in reaper.living_groups().values())


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _pids_of(marker: str) -> list[int]:
    """Processes whose command line holds MARKER (our sleeps are named by it)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd and _alive(int(entry.name)):
                out.append(int(entry.name))
    return out


@pytest.mark.parametrize("command", ["exec sleep 301", "sleep 302; echo after",
                                     "sleep 303 & sleep 304 & wait"])
def test_a_tool_shell_dies_with_a_killed_backend(tmp_path: Path, command: str) -> None:
    home = tmp_path / "home"
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(home), str(tmp_path), command],
                            stdout=subprocess.PIPE, text=True, cwd=REPO,
                            env=dict(os.environ, TANDEM_HOME=str(home)))
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "running"
    sleeps = [p for n in range(301, 305) for p in _pids_of(f"sleep {n}")]
    assert sleeps, "the command runs"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert all(_wait_gone(pid, 2.0) for pid in sleeps), "a tool process outlived the backend"


def test_stale_processes_of_a_dead_backend_are_swept_at_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run = home / "run"
    run.mkdir(parents=True)
    instance = "999999999-1-abcd"  # no such backend
    ours = subprocess.Popen(["sleep", "305"], start_new_session=True,
                            env={"PATH": os.environ["PATH"], reaper.OWNER_VAR: instance})
    # Same group number recorded, but no marker: not ours, left alone.
    stranger = subprocess.Popen(["sleep", "306"], start_new_session=True,
                                env={"PATH": os.environ["PATH"]})
    try:
        (run / f"{instance}.procs").write_text(f"+ {ours.pid}\n+ {stranger.pid}\n")
        assert reaper.sweep_stale(home) == 1
        assert ours.wait(5) == -signal.SIGKILL
        assert stranger.poll() is None
        assert not (run / f"{instance}.procs").exists()
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.anyio
async def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path, shell_timeout=0.5)
    with pytest.raises(ToolError, match="timeout"):
        await shell(ctx, ShellArgs(command="sleep 307 & exec sleep 308"))
    await anyio.sleep(0.2)
    assert _pids_of("sleep 307") == [] and _pids_of("sleep 308") == []


@pytest.mark.anyio
async def test_cancel_kills_the_whole_group(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path)
    with anyio.move_on_after(0.5):
        await shell(ctx, ShellArgs(command="sleep 309 & sleep 310; wait"))
    await anyio.sleep(0.2)
    assert _pids_of("sleep 309") == [] and _pids_of("sleep 310") == []
