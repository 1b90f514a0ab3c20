"""Fixtures for the session tests: a private TANDEM_HOME and config dir, real
projects on disk, and a runner for the real ``tandem`` CLI on a pipe or on a
real pseudo-terminal."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tandem.app import App

REPO = Path(__file__).resolve().parents[3]
PROMPT_END = "[Y/n] "


@dataclass
class Result:
    """A finished CLI run: exit code, stdout, and what appeared on the terminal/stderr."""

    code: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        """The one JSON object stdout must hold."""
        lines = [line for line in self.out.splitlines() if line.strip()]
        assert len(lines) == 1, f"expected one JSON line, got {self.out!r} / {self.err!r}"
        data: dict[str, Any] = json.loads(lines[0])
        return data


class Cli:
    """Runs ``python -m tandem.cli`` with the test's home and config."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def argv(self, args: list[str]) -> list[str]:
        return [sys.executable, "-m", "tandem.cli", *args]

    def run(self, args: list[str], cwd: Path, stdin: str | None = None) -> Result:
        """Run with no terminal: stdin is a pipe (or /dev/null)."""
        proc = subprocess.run(
            self.argv(args),
            cwd=cwd,
            env=self.env,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def pty(
        self, args: list[str], cwd: Path, answers: list[tuple[str, str]], timeout: float = 30
    ) -> Result:
        """Run on a real pseudo-terminal (stdin and stderr); stdout stays a pipe.

        ANSWERS is a list of (text to wait for on the terminal, line to type).
        """
        master, slave = os.openpty()
        proc = subprocess.Popen(
            self.argv(args),
            cwd=cwd,
            env=self.env,
            stdin=slave,
            stderr=slave,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + timeout
        pending = list(answers)

        def pump(wait: float) -> bool:
            nonlocal seen
            ready, _, _ = select.select([master], [], [], wait)
            if not ready:
                return False
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                return False
            seen += chunk
            return bool(chunk)

        try:
            while pending:
                expect, reply = pending[0]
                while expect.encode() not in seen:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        pump(0.2)
                        if expect.encode() in seen:
                            break
                        raise AssertionError(f"never saw {expect!r} on the terminal: {seen!r}")
                    pump(0.1)
                seen = seen.replace(expect.encode(), b"<" + expect.encode() + b">", 1)
                os.write(master, reply.encode() + b"\n")
                pending.pop(0)
            out = proc.stdout.read().decode() if proc.stdout else ""
            code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            while pump(0.05):
                pass
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(master)
        return Result(code, out, seen.decode(errors="replace"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty TANDEM_HOME."""
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """An XDG_CONFIG_HOME holding user settings ``{"model": "user-model", "theme": "dark"}``."""
    c = tmp_path / "config"
    (c / "tandem").mkdir(parents=True)
    (c / "tandem" / "settings.json").write_text(
        json.dumps({"model": "user-model", "theme": "dark"})
    )
    return c


@pytest.fixture
def env(home: Path, config: Path) -> dict[str, str]:
    """Environment of the CLI child processes."""
    e = dict(os.environ)
    e["TANDEM_HOME"] = str(home)
    e["XDG_CONFIG_HOME"] = str(config)
    e["PYTHONPATH"] = str(REPO / "python")
    return e


@pytest.fixture
def cli(env: dict[str, str]) -> Cli:
    """The CLI runner."""
    return Cli(env)


@pytest.fixture
def project(tmp_path: Path):
    """A factory of project directories with their own settings."""

    def make(name: str, settings: dict[str, Any] | None = None) -> Path:
        d = tmp_path / "projects" / name
        d.mkdir(parents=True)
        if settings is not None:
            (d / ".tandem").mkdir()
            (d / ".tandem" / "settings.json").write_text(json.dumps(settings))
        return d.resolve()

    return make


@pytest.fixture
def app(home: Path, config: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    """An `App` on the test's home, the user settings under CONFIG."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    a = App(home=home)
    yield a
    a.sessions.manager.close()
