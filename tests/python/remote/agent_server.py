"""Install and run the real ``openhands-agent-server`` for integration tests.

The server needs Python ≥ 3.12 (tandem itself runs on 3.11), so it lives in
a venv of its own outside the repository, cached between runs:
``${TANDEM_AGENT_SERVER_VENV:-$TANDEM_TEST_CACHE/agent-server-venv}``
(``TANDEM_TEST_CACHE`` defaults to ``${XDG_CACHE_HOME:-~/.cache}/tandem-test``).

Command line (what ``make test`` runs before pytest)::

    python tests/python/remote/agent_server.py install

installs the pinned version if the venv is missing or holds another version,
and does nothing otherwise. It exits 0 with a message when no Python ≥ 3.12
exists, so the integration test skips and says why.

``agent_server.py serve KEY`` (for the Emacs tests) starts the server with
the session key KEY, prints ``URL HOME`` on one line (or ``SKIP reason``),
and stops it when stdin closes.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

VERSION = "1.58.2"
PACKAGE = "openhands-agent-server"
STARTUP_TIMEOUT = 120.0


def venv_dir() -> Path:
    """Where the server's venv lives (outside the repository)."""
    explicit = os.environ.get("TANDEM_AGENT_SERVER_VENV")
    if explicit:
        return Path(explicit).expanduser()
    cached = os.environ.get("TANDEM_TEST_CACHE")
    if cached:
        return Path(cached).expanduser() / "agent-server-venv"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "tandem-test" / "agent-server-venv"


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.split()
        return int(out[0]), int(out[1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def find_python() -> str | None:
    """A Python ≥ 3.12: ``$TANDEM_PYTHON312``, then PATH, then pyenv's (oldest first)."""
    candidates: list[str] = []
    if os.environ.get("TANDEM_PYTHON312"):
        candidates.append(os.environ["TANDEM_PYTHON312"])
    # 3.12 first: the version this pin was tested with; newer ones after.
    for name in ("python3.12", "python3.13", "python3.14", "python3"):
        found = shutil.which(name)
        if found:
            candidates.append(found)
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/3.1[2-9]*/bin/python3"))
    for python in candidates:
        version = _version_of(python)
        if version is not None and version >= (3, 12):
            return python
    return None


def venv_python() -> Path:
    """The venv's interpreter."""
    return venv_dir() / "bin" / "python"


def installed_version() -> str | None:
    """The server version in the venv, or None when it is missing or broken."""
    python = venv_python()
    if not python.exists():
        return None
    try:
        return subprocess.run(
            [
                str(python),
                "-c",
                "import importlib.metadata as m, openhands.agent_server; "
                f"print(m.version({PACKAGE!r}))",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def install_command(python: str) -> list[list[str]]:
    """The commands that build the venv with PYTHON and install the pinned server."""
    return [
        [python, "-m", "venv", "--clear", str(venv_dir())],
        [
            str(venv_python()),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"{PACKAGE}=={VERSION}",
        ],
    ]


class Missing(Exception):
    """What keeps the real server from running here (the skip reason)."""


def ensure_installed() -> Path:
    """The venv's interpreter, installing the pinned server first if needed.

    Raises Missing when no Python ≥ 3.12 exists. A lock file keeps two
    concurrent runs from installing into the same venv at once.
    """
    if installed_version() == VERSION:
        return venv_python()
    python = find_python()
    if python is None:
        raise Missing(
            f"{PACKAGE} needs Python >= 3.12 and none was found "
            "(tried $TANDEM_PYTHON312, python3.12+ on PATH, ~/.pyenv/versions/3.12+)"
        )
    venv_dir().parent.mkdir(parents=True, exist_ok=True)
    with open(venv_dir().parent / "agent-server-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed_version() != VERSION:
            print(
                f"installing {PACKAGE}=={VERSION} into {venv_dir()} with {python}",
                file=sys.stderr,
                flush=True,
            )
            for cmd in install_command(python):
                subprocess.run(cmd, check=True)
    return venv_python()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RunningServer:
    """A started server: its URL, HOME, working dir, log file and session key."""

    url: str
    home: Path
    cwd: Path
    log: Path
    api_key: str | None
    startup_seconds: float
    pid: int | None = None
    """The server process (the leader of its own process group), for tests that kill it."""


@contextlib.contextmanager
def run_server(api_key: str | None = None) -> Iterator[RunningServer]:
    """Start the real server on 127.0.0.1 with a temp HOME and cwd; stop it after."""
    python = ensure_installed()
    with tempfile.TemporaryDirectory(prefix="tandem-agent-server-") as tmp:
        root = Path(tmp)
        home, cwd = root / "home", root / "cwd"
        home.mkdir()
        cwd.mkdir()
        log = root / "server.log"
        port = free_port()
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("SESSION_API_KEY", "OH_SESSION_API_KEYS_0")
        }
        env.update(
            HOME=str(home),
            OH_ENABLE_VSCODE="false",
            OH_PRELOAD_TOOLS="false",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
        )
        if api_key:
            env["SESSION_API_KEY"] = api_key
        started = time.monotonic()
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [
                    str(python),
                    "-m",
                    "openhands.agent_server",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                ],
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(url, proc, log, started)
            yield RunningServer(url, home, cwd, log, api_key, time.monotonic() - started,
                                proc.pid)
        finally:
            _stop(proc)


def serve_for_tests(api_key: str, what: str) -> Iterator[RunningServer]:
    """A module fixture's body: the server for WHAT's tests, or their skip saying why.

    Without the server (no Python >= 3.12, the install refused) pytest skips
    those tests with the reason printed, never silently.
    """
    import pytest  # only the test fixtures need it; the CLI above does not

    try:
        with run_server(api_key=api_key) as srv:
            print(f"\nagent-server up in {srv.startup_seconds:.1f}s at {srv.url}", file=sys.stderr)
            yield srv
    except Missing as e:
        print(f"\nSKIP agent-server {what}: {e}", file=sys.stderr)
        pytest.skip(str(e))


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, started: float) -> None:
    while time.monotonic() - started < STARTUP_TIMEOUT:
        if proc.poll() is not None:
            raise RuntimeError(
                f"agent-server exited with {proc.returncode}:\n{log.read_text()[-4000:]}"
            )
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise RuntimeError(
        f"agent-server not healthy after {STARTUP_TIMEOUT}s:\n{log.read_text()[-4000:]}"
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def serve(api_key: str) -> int:
    """Run the server for another process: ``URL HOME`` on stdout, until stdin closes."""
    try:
        with run_server(api_key=api_key) as srv:
            print(srv.url, srv.home, flush=True)
            sys.stdin.read()
    except Missing as e:
        print(f"SKIP {e}", flush=True)
    return 0


def main(argv: list[str]) -> int:
    """``install``: ensure the pinned venv; ``where``: print the venv path; ``serve KEY``."""
    if argv[1:] == ["where"]:
        print(venv_dir())
        return 0
    if len(argv) == 3 and argv[1] == "serve":
        return serve(argv[2])
    if argv[1:] != ["install"]:
        print(__doc__, file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        python = ensure_installed()
    except Missing as e:
        print(f"skipping the agent-server install: {e}", file=sys.stderr)
        return 0
    print(
        f"{PACKAGE}=={VERSION} ready in {python.parent.parent} ({time.monotonic() - started:.1f}s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
