"""`WireContext`: the kept, extended conversion sends exactly what the full one sends.

The reference is the full conversion, ``wire.initial_messages(complete_tool_pairs(m))``.
Contexts come the way the backend makes them: the live projection of a
journal grown one entry at a time (rewinds, undos, compactions, directive
spans, crashes mid tool call) plus the user's next message, through the real
`LiveProjection`; and the request bodies a real provider sends the fake
server across a rewind, an undo and a compaction.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
from fakes.script import Reply
from native_helpers import FAMILIES, RecordingSink, api_path, make_fake, make_provider, request

from tandem.providers.anthropic import AnthropicWire
from tandem.providers.base import Message, ToolCallRef
from tandem.providers.credentials import resolve_credentials
from tandem.providers.native import Wire
from tandem.providers.openai import OpenAIWire
from tandem.providers.wire_context import WireContext, complete_tool_pairs
from tandem.sessions.live_projection import LiveProjection
from tandem.sessions.projection import project


def _wires() -> list[Wire]:
    return [OpenAIWire(resolve_credentials("openai", api_key="k", env={})),
            AnthropicWire(resolve_credentials("anthropic", api_key="k", env={}))]


def _reference(wire: Wire, messages: list[Message]) -> list[dict[str, Any]]:
    return wire.initial_messages(complete_tool_pairs(messages))


def _grown_journal(rng: random.Random, steps: int) -> list[dict[str, Any]]:
    """Entries as the backend writes them, with what changes a context other than by
    appending: rewinds and their undos, compactions, directive spans, a crash mid tool
    call (a call without its result), tool calls joining a message, merged tool results,
    steers (guidance a turn took between two of its requests)."""
    out: list[dict[str, Any]] = []
    turn = 0
    for _ in range(steps):
        roll = rng.random()
        if roll < 0.07 and turn:
            out.append({"type": "rewind", "before_turn": rng.randint(1, turn),
                        "seq": len(out)})
            continue
        if roll < 0.1 and any(e["type"] == "rewind" for e in out):
            last = max(e["seq"] for e in out if e["type"] == "rewind")
            out.append({"type": "rewind_undo", "rewind_seq": last, "seq": len(out)})
            continue
        if roll < 0.13 and turn > 2:
            out.append({"type": "compaction", "summary": f"summary {len(out)}",
                        "first_kept_turn": rng.randint(0, turn)})
            continue
        turn += 1
        directive = rng.random() < 0.15
        out.append({"type": "turn_start", "turn": turn,
                    "origin": "directive" if directive else "chat"})
        if directive:
            out.append({"type": "directive_open", "turn": turn, "workspace": "w",
                        "directive": "D", "action": "implement"})
        out.append({"type": "user", "turn": turn, "text": f"u{turn} é"})
        if rng.random() < 0.5:
            out.append({"type": "assistant", "turn": turn, "text": f"looking {turn}"})
        for c in range(rng.choice([0, 0, 1, 2, 3])):
            out.append({"type": "tool_call", "turn": turn, "call_id": f"c{turn}.{c}",
                        "name": "read", "input": {"p": turn, "flag": bool(c % 2)}})
        crashed = rng.random() < 0.15
        for c in range(0 if crashed else 3):
            if any(e.get("call_id") == f"c{turn}.{c}" for e in out[-4:]):
                out.append({"type": "tool_result", "turn": turn, "call_id": f"c{turn}.{c}",
                            "status": rng.choice(["completed", "failed"]),
                            "output": f"o{turn}.{c}"})
        if crashed:
            out.append({"type": "turn_end", "turn": turn, "outcome": "aborted"})
            continue
        if rng.random() < 0.3:  # guidance given mid-turn, taken by the next request
            out.append({"type": "steer", "turn": turn, "text": f"steer {turn}"})
            for c in range(rng.choice([0, 1])):
                out.append({"type": "tool_call", "turn": turn, "call_id": f"s{turn}.{c}",
                            "name": "read", "input": {"p": turn}})
                out.append({"type": "tool_result", "turn": turn, "call_id": f"s{turn}.{c}",
                            "status": "completed", "output": f"so{turn}.{c}"})
        if rng.random() < 0.7:
            out.append({"type": "assistant", "turn": turn, "text": f"a{turn}"})
        out.append({"type": "turn_end", "turn": turn, "outcome": "succeeded"})
    return out


def test_kept_conversion_equals_the_full_one_on_grown_journals() -> None:
    rng = random.Random(16)
    for _ in range(120):
        entries = _grown_journal(rng, rng.randint(1, 40))
        for wire in _wires():
            live, ctx = LiveProjection(), WireContext(wire.extend_messages)
            handed: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
            step = rng.choice([1, 1, 3])
            for cut in [*range(0, len(entries), step), len(entries)]:
                live.sync(entries[:cut])
                # As the engine sends it: the context before the turn's user entry and
                # that entry's text as a new message (else a text of no entry's).
                nxt = entries[cut] if cut < len(entries) else {}
                text = nxt["text"] if nxt.get("type") == "user" else f"next {cut}"
                messages = [*live.messages(), Message(role="user", text=text)]
                assert [m.model_dump() for m in messages[:-1]] == [
                    m.model_dump() for m in project(entries[:cut])]
                sent = ctx.wire_messages(messages)
                assert sent == _reference(wire, messages)
                handed.append((sent, copy.deepcopy(sent)))
                sent.append({"role": "assistant", "content": "the loop appends"})
                handed[-1][1].append({"role": "assistant", "content": "the loop appends"})
            # No list handed out earlier changed afterwards (nor a dict in it).
            for sent, snapshot in handed:
                assert sent == snapshot


def test_sends_as_the_engine_makes_them_convert_afresh_only_after_a_change() -> None:
    """Each send is the context before a user entry plus that entry's text: only a
    rewind, an undo or a compaction since the last send makes a fresh conversion."""
    rng = random.Random(61)
    for _ in range(60):
        entries = _grown_journal(rng, rng.randint(10, 60))
        for wire in _wires():
            live, ctx = LiveProjection(), WireContext(wire.extend_messages)
            changes = 1  # the first send
            for cut, e in enumerate(entries):
                if e["type"] in ("rewind", "rewind_undo", "compaction", "directive_open"):
                    changes += 1
                if e["type"] != "user":
                    continue
                live.sync(entries[:cut])
                messages = [*live.messages(), Message(role="user", text=e["text"])]
                assert ctx.wire_messages(messages) == _reference(wire, messages)
            assert ctx.conversions <= changes


def test_appending_converts_only_the_new_messages() -> None:
    for wire in _wires():
        ctx = WireContext(wire.extend_messages)
        messages: list[Message] = []
        for n in range(50):
            messages += [Message(role="user", text=f"u{n}"),
                         Message(role="assistant", text="", tool_calls=[
                             ToolCallRef(id=f"c{n}", name="read", input={"n": n})]),
                         Message(role="tool", call_id=f"c{n}", text=f"o{n}"),
                         Message(role="tool", call_id=f"c{n}", text="duplicate, dropped")]
            # Each turn's last user message is a new, equal object next time.
            sent = ctx.wire_messages([*messages, Message(role="user", text="go")])
            assert sent == _reference(wire, [*messages, Message(role="user", text="go")])
            messages.append(Message(role="user", text="go"))
        assert ctx.conversions == 1
        # An assistant message with tool calls that is only equal (a rebuilt projection)
        # converts afresh: an input of 1 is equal to True but encodes apart.
        rebuilt = [m.model_copy() for m in messages]
        assert ctx.wire_messages(rebuilt) == _reference(wire, rebuilt)
        assert ctx.conversions == 2


def test_an_interrupted_tool_call_gets_its_placeholder_only_at_the_end() -> None:
    for wire in _wires():
        ctx = WireContext(wire.extend_messages)
        call = Message(role="assistant", text="running",
                       tool_calls=[ToolCallRef(id="x", name="shell", input={"c": 1})])
        first = [Message(role="user", text="go"), call]
        assert ctx.wire_messages(first) == _reference(wire, first)
        # The result arrives after all (a tool call's result written late): no placeholder.
        later = [*first, Message(role="tool", call_id="x", text="done"),
                 Message(role="user", text="next")]
        assert ctx.wire_messages(later) == _reference(wire, later)
        assert ctx.conversions == 1


@pytest.mark.anyio
@pytest.mark.parametrize("family", FAMILIES)
async def test_the_bodies_sent_across_a_rewind_an_undo_and_a_compaction(
        family: str, workspace: Path) -> None:
    """Through the real provider and the fake server: each body's messages are the
    reference conversion of that turn's context, whatever changed between turns."""
    def turn(n: int) -> list[dict[str, Any]]:
        return [{"type": "turn_start", "turn": n, "origin": "chat"},
                {"type": "user", "turn": n, "text": f"request {n}"},
                {"type": "tool_call", "turn": n, "call_id": f"c{n}", "name": "read",
                 "input": {"path": f"f{n}"}},
                {"type": "tool_result", "turn": n, "call_id": f"c{n}", "status": "completed",
                 "output": f"contents {n}"},
                {"type": "assistant", "turn": n, "text": f"answer {n}"},
                {"type": "turn_end", "turn": n, "outcome": "succeeded"}]

    entries: list[dict[str, Any]] = []
    changes: list[list[dict[str, Any]]] = [
        turn(1), turn(2), turn(3),
        [{"type": "rewind", "before_turn": 2, "seq": 100}],
        turn(4),
        [{"type": "rewind_undo", "rewind_seq": 100, "seq": 101}],
        [{"type": "compaction", "summary": "so far", "first_kept_turn": 3}],
        turn(5)]
    live = LiveProjection()
    contexts = []
    wire = _wires()[0 if family == "openai" else 1]
    with make_fake(family, [Reply(text="ok")] * len(changes)) as fake:
        provider = make_provider(family, fake)
        for n, change in enumerate(changes, start=1):
            entries += change
            live.sync(entries)
            messages = [*live.messages(), Message(role="user", text=f"send {n}")]
            contexts.append(messages)
            result = await provider.run(request(workspace, messages=messages, turn=n),
                                        RecordingSink())
            assert result.outcome == "succeeded"
        bodies = fake.api_requests(api_path(family))
    assert len(bodies) == len(changes)
    for messages, req in zip(contexts, bodies, strict=True):
        sent = req.body["messages"]
        if family == "openai":
            sent = sent[1:]  # the system message
        reference = _reference(wire, messages)
        if family == "anthropic":  # the prompt-cache mark on the last block
            last = reference[-1]["content"][-1] = {**reference[-1]["content"][-1]}
            last["cache_control"] = {"type": "ephemeral"}
        assert sent == reference


def test_the_body_encodes_kept_messages_once_and_reads_as_the_plain_encoding() -> None:
    import json

    from pydantic_core import to_json

    from tandem.providers.wire_context import encode_body

    rng = random.Random(5)
    for wire in _wires():
        ctx = WireContext(wire.extend_messages)
        live = LiveProjection()
        entries = _grown_journal(rng, 80)
        for cut, e in enumerate(entries):
            if e["type"] != "user":
                continue
            live.sync(entries[:cut])
            sent = ctx.wire_messages([*live.messages(), Message(role="user", text=e["text"])])
            sent.append({"role": "assistant", "content": "a step of the loop, not kept"})
            body = {"model": "m", "system": "S", "messages": sent, "stream": True}
            kept = [m for m in sent if ctx.fragment(m) is not None]
            assert len(kept) >= len(sent) - 3  # the last merged copies and the step
            assert all(ctx.fragment(m) == to_json(m) for m in kept)
            assert json.loads(encode_body(body, ctx.fragment)) == json.loads(to_json(body))
    assert encode_body({"messages": []}, ctx.fragment) == b'{"messages":[]}'
    assert encode_body({"n": 1}, ctx.fragment) == b'{"n":1}'
    assert ctx.fragment({"role": "user", "content": "equal is not kept"}) is None
