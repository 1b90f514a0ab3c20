"""Install a pinned npm package for the integration tests, outside the repository.

Packages go into ``$TANDEM_TEST_CACHE/<area>/<slot>``, by default
``${XDG_CACHE_HOME:-~/.cache}/tandem-test``. The tests run with a HOME and
XDG directories of their own, so the Makefile and ``tests/python/conftest.py``
set ``TANDEM_TEST_CACHE`` from the real ones first.
An install happens in a temporary sibling directory and is renamed into place
when complete, so an interrupted or concurrent install never leaves a
half-installed package behind. `tests/acp_adapter.py` (the Claude Code ACP
adapter) and `tests/mcp_everything.py` (the MCP reference server) use it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

INSTALL_TIMEOUT = 600


class NpmUnavailable(Exception):
    """The package is not installed and cannot be installed here (the message says why)."""


CACHE_ENV = "TANDEM_TEST_CACHE"
"""Where the integration tests' installed programs live (outside any test's HOME)."""


def test_cache() -> Path:
    """``$TANDEM_TEST_CACHE``, else ``${XDG_CACHE_HOME:-~/.cache}/tandem-test``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tandem-test"


def cache_root(area: str) -> Path:
    """Where the pinned packages of AREA are kept."""
    return test_cache() / area


def install_command(prefix: Path, package: str, version: str) -> list[str]:
    """The npm command that installs PACKAGE@VERSION into PREFIX."""
    return ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save",
            "--loglevel=error", f"{package}@{version}"]


def ensure(area: str, slot: str, package: str, version: str, bin_name: str) -> Path:
    """The executable BIN_NAME of PACKAGE@VERSION in AREA/SLOT, installing it when missing.

    Raises `NpmUnavailable` when node/npm are missing or npm fails.
    """
    root = cache_root(area)
    target = root / slot / "node_modules" / ".bin" / bin_name
    if target.exists():
        return target
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise NpmUnavailable(f"{tool} is not on PATH")
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{slot}-", dir=root))
    try:
        try:
            done = subprocess.run(install_command(staging, package, version),
                                  capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                                  check=False)
        except subprocess.TimeoutExpired:
            raise NpmUnavailable(f"npm install timed out after {INSTALL_TIMEOUT} s") from None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise NpmUnavailable(f"npm install failed ({done.returncode}): {' | '.join(tail)}")
        if not (staging / "node_modules" / ".bin" / bin_name).exists():
            raise NpmUnavailable(f"npm installed no {bin_name} executable")
        try:
            staging.rename(root / slot)
        except OSError:
            # Another install finished first; theirs is as good as ours.
            if not target.exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
