"""The context a native provider sends, converted once and extended turn by turn.

A stateless chat API is sent the whole context every turn (2,000 messages
at turn 1,000). Pairing the tool calls (`complete_tool_pairs`) and turning
each message into the API's dicts cost ~4 ms there, all of it for messages
that were already converted the turn before. `WireContext` keeps the
converted prefix: a turn whose messages begin with the ones it converted
last time (the same objects, or equal ones without tool calls: the user
message the engine built last turn is the projection's own object now)
converts only the messages after them; any other context (a rewind, a
compaction, an undo, a directive's isolated prompt) is converted afresh and
becomes the kept prefix. The result is always what the full conversion of
the same messages gives (`tests/python/providers/test_wire_context.py`).

Both steps are left folds, which is why this holds: pairing only appends
(placeholders for unanswered calls go in when the next non-tool message
arrives, and at the very end, which is computed apart and never kept), and
a wire conversion looks only at the message it converts and the last dict
it produced (Anthropic merges neighbours of one role into it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic_core import to_json

from tandem.providers.base import Message, ToolCallRef

Extend = Callable[[list[dict[str, object]], Iterable[Message]], None]
"""Append the wire form of some messages to a list of wire dicts (a `Wire`'s
``extend_messages``): it may replace the list's last dict by a merged copy,
never change a dict it did not make in that call."""

INTERRUPTED = "(no result: the turn was interrupted)"


class ToolPairing:
    """`complete_tool_pairs` as a fold: feed messages in order, read the pairs out."""

    def __init__(self) -> None:
        self.out: list[Message] = []
        """Every message kept so far (without the closing placeholders)."""
        self._pending: list[ToolCallRef] = []
        self._called: set[str] = set()

    def feed(self, messages: Iterable[Message]) -> None:
        """Take in MESSAGES, appending to `out` what they contribute."""
        out, pending, called = self.out, self._pending, self._called
        for msg in messages:
            if msg.role == "tool":
                if msg.call_id in called:
                    out.append(msg)
                    called.discard(msg.call_id)
                    pending[:] = [p for p in pending if p.id != msg.call_id]
                continue
            if pending:
                out.extend(self.closing())
                pending.clear()
            called.clear()  # results must follow their assistant message directly
            out.append(msg)
            if msg.role == "assistant" and msg.tool_calls:
                pending.extend(msg.tool_calls)
                called.update(t.id for t in msg.tool_calls)

    def closing(self) -> list[Message]:
        """Placeholder results for the calls still unanswered (what ends the context)."""
        return [Message(role="tool", call_id=ref.id, name=ref.name, text=INTERRUPTED,
                        is_error=True) for ref in self._pending]


def complete_tool_pairs(messages: Iterable[Message]) -> list[Message]:
    """MESSAGES with every tool call answered and every tool result called.

    Both APIs reject a context where a tool call has no result (a turn
    interrupted mid-tool) or a result answers no call; we add a placeholder
    result or drop the orphan, instead of failing every later turn.
    """
    pairing = ToolPairing()
    pairing.feed(messages)
    return [*pairing.out, *pairing.closing()]


class WireContext:
    """One session's context in one API's wire format, kept between turns.

    Bounded: it holds one context (the last one sent) and its dicts.
    """

    def __init__(self, extend: Extend) -> None:
        self._extend = extend
        self.conversions = 0
        """Conversions from the first message (the first one included): what tests watch."""
        self._start()

    def _start(self) -> None:
        self._src: list[Message] = []
        self._pairing = ToolPairing()
        self._wire: list[dict[str, object]] = []
        self._encoded: dict[int, tuple[dict[str, object], bytes]] = {}
        """The JSON of each kept dict, by its id (the dict is held: the id stays its own)."""
        self.conversions += 1

    def wire_messages(self, messages: Sequence[Message]) -> list[dict[str, object]]:
        """MESSAGES paired and in wire format: a fresh list (the caller may append to it)."""
        src = self._src
        n = len(src)
        if len(messages) < n or not _same_prefix(src, messages):
            self._start()
            src, n = self._src, 0
        new = messages[n:]
        if new:
            kept = len(self._pairing.out)
            self._pairing.feed(new)
            wire = self._wire
            last = wire[-1] if wire else None
            self._extend(wire, self._pairing.out[kept:])
            src.extend(new)
            start = len(self._encoded)  # the kept dicts before this call are encoded
            if last is not None and wire[start - 1] is not last:  # merged into a copy
                del self._encoded[id(last)]
                start -= 1
            for d in wire[start:]:  # encoded once, now that no call changes them
                self._encoded[id(d)] = (d, to_json(d))
        out = list(self._wire)
        closing = self._pairing.closing()
        if closing:
            self._extend(out, closing)
        return out


    def fragment(self, d: dict[str, object]) -> bytes | None:
        """The JSON of D when it is one of the kept dicts (encoded once), else None."""
        found = self._encoded.get(id(d))
        return found[1] if found is not None and found[0] is d else None


def encode_body(body: Mapping[str, object], fragment: Callable[[dict[str, object]], bytes | None]
                ) -> bytes:
    """BODY as JSON, its ``messages`` last, each message's JSON from FRAGMENT when it
    has it (the kept context: ~0.5 MB not encoded again each step), else encoded here.

    The same JSON value as ``to_json(body)``; only the key order differs.
    """
    rest = dict(body)
    messages = rest.pop("messages", None)
    if not isinstance(messages, list):  # None: a body without messages
        return to_json(body)
    parts = [fragment(m) or to_json(m) for m in messages]
    head = to_json(rest)[:-1]
    return b"".join((head, b"," if len(head) > 1 else b"", b'"messages":[',
                     b",".join(parts), b"]}"))


def _same_prefix(kept: list[Message], messages: Sequence[Message]) -> bool:
    """Whether MESSAGES begins with KEPT: the same objects, or equal ones without tool
    calls (a tool input compares 1 equal to 1.0 and True, which encode apart)."""
    for a, b in zip(kept, messages, strict=False):
        if a is not b and (a.tool_calls or b.tool_calls or a != b):
            return False
    return True
