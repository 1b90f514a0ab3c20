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
import types
import typing
from typing import Any

from pydantic import BaseModel

from tandem.protocol.base import Handler, MethodSpec

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
    "parallel/best-of", "parallel/compare", "parallel/create", "parallel/land", "parallel/list",
    "parallel/patch", "parallel/record", "parallel/remove", "parallel/test",
    "permissions/add-rule", "permissions/remove-rule", "permissions/rules", "ping",
    "providers/default", "providers/models", "remote/attach", "remote/conversation-new",
    "remote/detach", "remote/download", "remote/hosts", "remote/resolve", "remote/target",
    "remote/upload", "review/before", "review/revert", "sessions/close", "sessions/compact",
    "sessions/compact-cancel", "sessions/compaction-status", "sessions/continue",
    "sessions/current", "sessions/entries", "sessions/fork", "sessions/history",
    "sessions/list", "sessions/lookup", "sessions/new", "sessions/open-file",
    "sessions/overview", "sessions/relocate", "sessions/rename", "sessions/resume",
    "sessions/rewind", "sessions/rewind-plan", "sessions/rewind-undo",
    "sessions/rewind-undo-plan", "sessions/switch", "sessions/turn-patch", "sessions/turns",
    "sessions/usage", "settings/report", "settings/save-user", "settings/trust",
    "settings/untrust", "turns/answer", "turns/cancel", "turns/configure", "turns/queue",
    "turns/queue-edit", "turns/queue-list", "turns/queue-remove", "turns/queue-send",
    "turns/resend", "turns/send", "turns/set-provider", "turns/status", "turns/steer",
    "turns/wait"
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


def reply_model(handler: Handler) -> type[BaseModel]:
    """The reply model HANDLER's return annotation names; TypeError when it names none.

    A reply is a pydantic model defined in `tandem.protocol` (a ``RootModel``
    for a reply that is one value), or such a model ``| None`` (nil: there is
    none). ``App``, imported by handlers for type checking only, reads as Any.
    """
    return reply_of(handler)[0]


def reply_of(handler: Handler) -> tuple[type[BaseModel], bool]:
    """`reply_model` of HANDLER, and whether the reply may be nil instead."""
    where = f"{handler.__module__}.{handler.__qualname__}"
    try:
        hints = typing.get_type_hints(handler, localns={"App": Any})
    except Exception as e:
        raise TypeError(f"{where}: unreadable annotations: {e}") from None
    ret = hints.get("return")
    args = typing.get_args(ret) if isinstance(ret, types.UnionType) or (
        typing.get_origin(ret) is typing.Union) else (ret,)
    models = [a for a in args if a is not type(None)]
    if len(models) == 1 and isinstance(models[0], type) and issubclass(models[0], BaseModel) \
            and models[0].__module__.startswith("tandem.protocol."):
        return models[0], len(args) > 1
    raise TypeError(f"{where} returns {ret!r}, not a reply model of tandem.protocol")
