"""Install the Claude Code ACP adapter from npm for the integration tests.

The adapter goes into a cache directory outside the repository,
``$TANDEM_TEST_CACHE/acp/<version>`` (see `npm_cache`), pinned to
`ADAPTER_VERSION`. An install happens in a temporary sibling directory and is
renamed into place when complete, so an interrupted or concurrent install
never leaves a half-installed adapter behind.

Command line (for ``make test``): ``python tests/acp_adapter.py`` installs
when missing and prints the adapter's executable; exit status 1 with the
reason on stderr when npm or the registry is unavailable.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # npm_cache, when run as a script
import npm_cache  # noqa: E402

ADAPTER_PACKAGE = "@zed-industries/claude-agent-acp"
ADAPTER_VERSION = "0.23.1"
ADAPTER_BIN = "claude-agent-acp"
CAPS_ADAPTER_VERSION = "0.17.1"
"""The last adapter release whose tools use the client's ``fs/*`` and
``terminal/*`` (its ``mcp__acp__Read``/``Write``/``Edit``/``Bash``); from 0.18.0
the adapter reads, writes and runs commands itself (claude-agent-acp issue
#339). The capability tests run it; everything else runs `ADAPTER_VERSION`."""
OVERRIDE_ENV = "TANDEM_TEST_ACP_ADAPTER"
"""``PACKAGE@VERSION`` to test another adapter build (its bin must be `ADAPTER_BIN`),
e.g. the project's later name ``@agentclientprotocol/claude-agent-acp@0.101.0``."""


def adapter_spec() -> tuple[str, str]:
    """The (package, version) to install: the pin, or the override from the environment."""
    override = os.environ.get(OVERRIDE_ENV, "").strip()
    if not override:
        return ADAPTER_PACKAGE, ADAPTER_VERSION
    package, sep, version = override.rpartition("@")
    if not sep or not package or not version or version.startswith("/"):
        raise AdapterUnavailable(f"{OVERRIDE_ENV} must be PACKAGE@VERSION, not {override!r}")
    return package, version


class AdapterUnavailable(Exception):
    """The adapter is not installed and cannot be installed here (the message says why)."""


def cache_dir() -> Path:
    """Where pinned adapter versions are kept."""
    return npm_cache.cache_root("acp")


def _slot(package: str, version: str) -> str:
    # The pinned adapter keeps the plain version as its directory name.
    if package == ADAPTER_PACKAGE:
        return version
    return f"{package.strip('@').replace('/', '+')}-{version}"


def adapter_bin(package: str = ADAPTER_PACKAGE, version: str = ADAPTER_VERSION) -> Path:
    """The adapter's executable inside the cache (it may not exist yet)."""
    return cache_dir() / _slot(package, version) / "node_modules" / ".bin" / ADAPTER_BIN


def install_command(
    prefix: Path, package: str = ADAPTER_PACKAGE, version: str = ADAPTER_VERSION
) -> list[str]:
    """The npm command that installs the adapter into PREFIX."""
    return npm_cache.install_command(prefix, package, version)


def ensure_adapter(version: str | None = None) -> Path:
    """The adapter executable (see `adapter_spec`; VERSION: that release of the
    pinned package instead), installing it first when missing.

    Raises `AdapterUnavailable` when node/npm are missing or npm fails.
    """
    package, version = (ADAPTER_PACKAGE, version) if version else adapter_spec()
    try:
        return npm_cache.ensure("acp", _slot(package, version), package, version, ADAPTER_BIN)
    except npm_cache.NpmUnavailable as exc:
        raise AdapterUnavailable(str(exc)) from None


def main() -> int:
    """Install when missing; print the executable, or the reason it is unavailable."""
    try:
        print(ensure_adapter())
        print(ensure_adapter(CAPS_ADAPTER_VERSION))
    except AdapterUnavailable as exc:
        print(f"ACP adapter unavailable: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
