"""The method table: every method the backend answers, gathered by name.

Each method namespace has one module in `tandem.adapters` declaring
``METHODS`` (``sessions/…`` in ``tandem.adapters.sessions``; ``hello``,
``ping``, ``page`` and ``doctor`` in ``tandem.adapters.core``). The table
imports them by name, only when the server builds it: `tandem serve` prints
its port line before pydantic and the domain load.
"""

from __future__ import annotations

import importlib
import logging

from tandem.protocol.base import MethodSpec

log = logging.getLogger("tandem.server")

DOMAIN_APIS = (
    "tandem.adapters.core",
    "tandem.adapters.debug",
    "tandem.adapters.sessions",
    "tandem.adapters.review",
    "tandem.adapters.turns",
    "tandem.adapters.providers",
    "tandem.adapters.acp",
    "tandem.adapters.mcp",
    "tandem.adapters.checkpoints",
    "tandem.adapters.directives",
    "tandem.adapters.remote",
    "tandem.adapters.settings",
    "tandem.adapters.permissions",
    "tandem.adapters.parallel",
)


def build_table(modules: tuple[str, ...] = DOMAIN_APIS) -> dict[str, MethodSpec]:
    """Return name → spec for every method of MODULES; duplicate names are an error."""
    table: dict[str, MethodSpec] = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):
                continue  # that domain has no methods yet
            raise
        for spec in getattr(module, "METHODS", []):
            if spec.name in table:
                raise RuntimeError(f"method {spec.name} declared twice ({name})")
            table[spec.name] = spec
    return table
