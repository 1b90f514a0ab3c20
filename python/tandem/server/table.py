"""The method table: every method the backend answers, gathered by name.

Each domain declares ``METHODS`` in its ``api`` module; the table imports
those modules by name so that a domain still being built (no ``api`` module
yet) does not stop the server from starting.
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
    "tandem.workspace.api",
    "tandem.adapters.remote",
    "tandem.adapters.settings",
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
