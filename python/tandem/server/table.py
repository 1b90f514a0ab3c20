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
)

EARLY_APIS = ("tandem.adapters.core",)
"""The methods `tandem serve` answers before its services are built (start-up)."""

METHOD_NAMES = (
    "acp/choose", "acp/options", "checkpoints/diff", "checkpoints/list",
    "checkpoints/plan-restore", "debug/big", "debug/call-emacs", "debug/echo", "debug/emit",
    "debug/entry-types", "debug/settings-keys", "debug/sleep", "directives/act",
    "directives/anchor", "directives/archive", "directives/create", "directives/diff",
    "directives/edit", "directives/get", "directives/list", "directives/preview",
    "directives/reattach", "directives/rebind", "directives/workspace", "doctor", "hello",
    "mcp/disable", "mcp/enable", "mcp/list", "mcp/log", "mcp/restart", "page",
    "permissions/add-rule", "permissions/remove-rule", "permissions/rules", "ping",
    "providers/default", "providers/models", "remote/attach", "remote/conversation-new",
    "remote/detach", "remote/download", "remote/hosts", "remote/resolve", "remote/target",
    "remote/upload", "review/before", "review/revert", "sessions/close", "sessions/compact",
    "sessions/compact-cancel", "sessions/compaction-status", "sessions/continue",
    "sessions/current", "sessions/entries", "sessions/fork", "sessions/history", "sessions/list",
    "sessions/lookup", "sessions/new", "sessions/open-file", "sessions/overview",
    "sessions/relocate", "sessions/rename", "sessions/resume", "sessions/rewind",
    "sessions/rewind-plan", "sessions/rewind-undo", "sessions/rewind-undo-plan", "sessions/switch",
    "sessions/turn-patch", "sessions/turns", "sessions/usage", "settings/report",
    "settings/save-user", "settings/trust", "settings/untrust", "turns/answer", "turns/cancel",
    "turns/configure", "turns/queue", "turns/queue-edit", "turns/queue-list", "turns/queue-remove",
    "turns/queue-send", "turns/resend", "turns/send", "turns/set-provider", "turns/status",
    "turns/steer", "turns/wait",
)
"""Every method the table holds, by name: what ``hello`` lists before the domain
adapters are imported (a test checks it against `build_table`)."""


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
