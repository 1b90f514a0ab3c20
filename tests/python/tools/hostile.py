"""Hostile trees and the child-process runner for the tool-confinement tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

CHILD = Path(__file__).with_name("tool_child.py")
REPO = Path(__file__).resolve().parents[3]


def run_tool(
    root: Path, name: str, args: dict[str, Any], *, timeout: float = 20.0,
    tool_timeout: float | None = None,
) -> dict[str, Any]:
    """Run tool NAME with ARGS on ROOT in a child process; its JSON report.

    A call still running after TIMEOUT seconds is a failure ("hung"), so a
    tool that blocks on a FIFO fails the test instead of freezing it.
    """
    argv = [sys.executable, str(CHILD), str(root), name, json.dumps(args)]
    if tool_timeout is not None:
        argv.append(str(tool_timeout))
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{name} {args} hung for more than {timeout} s") from None
    assert done.returncode == 0, f"{name} {args} crashed: {done.stderr[-2000:]}"
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def plant(root: Path, home: Path) -> None:
    """Fill ROOT with what a hostile repository ships, pointing into HOME and the system.

    * ``link`` → ``../outside/secret`` (a file beside the root);
    * ``link_dir`` → ``../outside`` (a folder beside the root);
    * ``deploy_key`` → HOME's ``.ssh/id_rsa``;
    * ``pipe``: a FIFO (opening it for reading blocks until a writer comes);
    * ``zero`` → ``/dev/zero`` (reading it never ends).
    """
    ssh = home / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    (ssh / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- OUTSIDE\n")
    (root / "link").symlink_to(root.parent / "outside" / "secret")
    (root / "link_dir").symlink_to(root.parent / "outside")
    (root / "deploy_key").symlink_to(ssh / "id_rsa")
    os.mkfifo(root / "pipe")
    (root / "zero").symlink_to("/dev/zero")
