"""The request body of a turn at turn 1,000: kept context against full conversion.

A stateless chat API is sent the whole context each turn. Figure: what the
native provider does per turn before the request leaves — the context of a
1,000-turn session (`bench_projection.turn_entries`, through the real
`LiveProjection`) plus the new request, paired, in wire format and encoded
as the JSON body — with `WireContext` (converts and encodes only the
messages after the ones it sent last turn) and `encode_body`. Anchor, timed
alternately in the same run: the full conversion and encoding of the same
context each turn (``complete_tool_pairs``, ``initial_messages``,
``to_json``: what every turn did before). No target of its own: it is the
"provider call beyond the fake" part of ``bench_turn``, measured without the
HTTP request.
Run: ``.venv/bin/python bench/bench_wire_context.py [--turns N] [--runs N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "python"))

from pydantic_core import to_json  # noqa: E402

from bench_projection import turn_entries  # noqa: E402
from benchlib import emit  # noqa: E402
from tandem.providers.anthropic import AnthropicWire  # noqa: E402
from tandem.providers.base import Message  # noqa: E402
from tandem.providers.credentials import resolve_credentials  # noqa: E402
from tandem.providers.native import Wire  # noqa: E402
from tandem.providers.openai import OpenAIWire  # noqa: E402
from tandem.providers.wire_context import WireContext, complete_tool_pairs, encode_body  # noqa: E402
from tandem.sessions.live_projection import LiveProjection  # noqa: E402


def _body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "bench", "messages": messages, "stream": True}


def main() -> None:
    """Print one line per wire format."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    wires: list[tuple[str, Wire]] = [
        ("openai", OpenAIWire(resolve_credentials("openai", api_key="k", env={}))),
        ("anthropic", AnthropicWire(resolve_credentials("anthropic", api_key="k", env={})))]
    for family, wire in wires:
        entries: list[dict[str, Any]] = []
        for n in range(1, args.turns - args.runs):
            entries += turn_entries(n, directive=False)
        live, ctx = LiveProjection(), WireContext(wire.extend_messages)
        kept, full = [], []
        size = 0
        for n in range(args.turns - args.runs, args.turns + 1):
            live.sync(entries)
            turn = turn_entries(n, directive=False)
            # As the engine sends it: the context, then the request the journal then holds.
            messages = [*live.messages(), Message(role="user", text=turn[1]["text"])]
            t = time.perf_counter()
            body = encode_body(_body(ctx.wire_messages(messages)), ctx.fragment)
            kept.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            reference = to_json(_body(wire.initial_messages(complete_tool_pairs(messages))))
            full.append((time.perf_counter() - t) * 1000)
            size = len(body)
            entries += turn
        # The first is the first conversion (no kept context yet): not a turn's cost.
        emit(f"request_body_turn_{args.turns}_{family}_kept_context", statistics.median(kept[1:]),
             "full_conversion_and_encoding_each_turn", statistics.median(full[1:]), None, 2)
        print(f"{family}: body {size / 1000:.0f} KB, {len(messages)} messages, "
              f"{ctx.conversions} full conversion(s); same length as the reference: "
              f"{len(reference) == size}", file=sys.stderr)


if __name__ == "__main__":
    main()
