"""Diagnostics (``debug/…``): tests and ``make bench`` exercise the transport through them.

Echo, large replies, event floods, slow calls and calls back into Emacs,
plus the lists the front end's tests compare against (settings keys, entry
types).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tandem.config.keys import setting_keys
from tandem.protocol.base import Count, MethodSpec, Names, Number, TandemError, Value
from tandem.protocol.core import (
    BigParams,
    CallEmacsParams,
    EchoParams,
    EmitParams,
    NoParams,
    SleepParams,
)
from tandem.protocol.events import (
    AnyEvent,
    EntryEvent,
    InteractionEvent,
    TurnEndedEvent,
    TurnStarted,
    delta,
)
from tandem.protocol.peer import CURRENT
from tandem.store.models import ENTRY_TYPES

if TYPE_CHECKING:
    from tandem.app import App


async def echo(app: App, p: EchoParams) -> Value:
    """Return the value as it arrived."""
    return Value(p.value)


async def big(app: App, p: BigParams) -> Value:
    """Return a string of SIZE characters, or ITEMS small plists."""
    if p.items:
        return Value([{"i": i, "name": f"item-{i}", "ok": True} for i in range(p.items)])
    unit = "0123456789abcdef" * 64
    return Value((unit * (p.size // len(unit) + 1))[: p.size])


def _sample(kind: str, text: str, i: int) -> AnyEvent:
    """The Ith diagnostic event of KIND (turn 1), carrying TEXT where it has text."""
    if kind == "delta":
        return delta(1, "text", text)
    if kind == "turn-started":
        return TurnStarted(turn=1, origin="chat", provider="", model="", directive=None)
    if kind == "interaction":
        return InteractionEvent(turn=1, interaction_id=f"1.{i + 1}", title=text, tool="debug",
                                options=[])
    if kind == "entry":
        return EntryEvent(entry={"type": "assistant", "seq": i + 1, "ts": "", "turn": 1,
                                 "text": text})
    if kind == "turn-ended":
        return TurnEndedEvent(turn=1, outcome="succeeded", error=None, files_changed=[])
    raise TandemError("invalid", f"debug/emit cannot send {kind!r} events")


async def emit(app: App, p: EmitParams) -> Count:
    """Publish COUNT events and return COUNT."""
    for i in range(p.count):
        app.events.publish(p.session, _sample(p.kind, p.text, i))
        if i % 1000 == 999:
            await asyncio.sleep(0)  # let the flusher run, as a real stream would
    return Count(p.count)


async def sleep(app: App, p: SleepParams) -> Number:
    """Wait SECONDS and return them."""
    await asyncio.sleep(p.seconds)
    return Number(p.seconds)


async def call_emacs(app: App, p: CallEmacsParams) -> Value:
    """Call back into Emacs from inside a handler and return its answer."""
    return Value(await CURRENT.get().call(p.method, *p.args))


async def settings_keys(app: App, p: NoParams) -> Names:
    """Every settings key, dotted (for the front end's customization tests)."""
    return Names(setting_keys())


async def entry_types(app: App, p: NoParams) -> Names:
    """The journal entry types this backend's models define (for the view's tests)."""
    return Names(sorted(ENTRY_TYPES))


METHODS = [
    MethodSpec("debug/echo", EchoParams, echo, "Diagnostics: return VALUE."),
    MethodSpec("debug/big", BigParams, big, "Diagnostics: a large reply."),
    MethodSpec("debug/emit", EmitParams, emit, "Diagnostics: publish COUNT events."),
    MethodSpec("debug/sleep", SleepParams, sleep, "Diagnostics: answer after SECONDS."),
    MethodSpec("debug/call-emacs", CallEmacsParams, call_emacs, "Diagnostics: call into Emacs."),
    MethodSpec("debug/entry-types", NoParams, entry_types, "Diagnostics: the journal entry types."),
    MethodSpec("debug/settings-keys", NoParams, settings_keys, "Diagnostics: every settings key."),
]
