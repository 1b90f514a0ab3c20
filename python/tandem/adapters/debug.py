"""Diagnostics (``debug/…``): tests and ``make bench`` exercise the transport through them.

Echo, large replies, event floods, slow calls and calls back into Emacs,
plus the lists the front end's tests compare against (settings keys, entry
types).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from tandem.config.keys import setting_keys
from tandem.protocol.base import MethodSpec
from tandem.protocol.core import (
    BigParams,
    CallEmacsParams,
    EchoParams,
    EmitParams,
    NoParams,
    SleepParams,
)
from tandem.protocol.peer import CURRENT
from tandem.store.models import ENTRY_TYPES

if TYPE_CHECKING:
    from tandem.app import App


async def echo(app: App, p: EchoParams) -> Any:
    """Return the value as it arrived."""
    return p.value


async def big(app: App, p: BigParams) -> Any:
    """Return a string of SIZE characters, or ITEMS small plists."""
    if p.items:
        return [{"i": i, "name": f"item-{i}", "ok": True} for i in range(p.items)]
    unit = "0123456789abcdef" * 64
    return (unit * (p.size // len(unit) + 1))[: p.size]


async def emit(app: App, p: EmitParams) -> int:
    """Publish COUNT events and return COUNT."""
    for i in range(p.count):
        app.events.publish(p.session, p.kind, {"turn": 1, "stream": "text", "text": p.text, "i": i})
        if i % 1000 == 999:
            await asyncio.sleep(0)  # let the flusher run, as a real stream would
    return p.count


async def sleep(app: App, p: SleepParams) -> float:
    """Wait SECONDS and return them."""
    await asyncio.sleep(p.seconds)
    return p.seconds


async def call_emacs(app: App, p: CallEmacsParams) -> Any:
    """Call back into Emacs from inside a handler and return its answer."""
    return await CURRENT.get().call(p.method, *p.args)


async def settings_keys(app: App, p: NoParams) -> list[str]:
    """Every settings key, dotted (for the front end's customization tests)."""
    return setting_keys()


async def entry_types(app: App, p: NoParams) -> list[str]:
    """The journal entry types this backend's models define (for the view's tests)."""
    return sorted(ENTRY_TYPES)


METHODS = [
    MethodSpec("debug/echo", EchoParams, echo, "Diagnostics: return VALUE."),
    MethodSpec("debug/big", BigParams, big, "Diagnostics: a large reply."),
    MethodSpec("debug/emit", EmitParams, emit, "Diagnostics: publish COUNT events."),
    MethodSpec("debug/sleep", SleepParams, sleep, "Diagnostics: answer after SECONDS."),
    MethodSpec("debug/call-emacs", CallEmacsParams, call_emacs, "Diagnostics: call into Emacs."),
    MethodSpec("debug/entry-types", NoParams, entry_types, "Diagnostics: the journal entry types."),
    MethodSpec("debug/settings-keys", NoParams, settings_keys, "Diagnostics: every settings key."),
]
