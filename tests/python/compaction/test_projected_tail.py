"""`projected_tail`: the projection of the tail equals the projection of it all."""

from __future__ import annotations

import random
from typing import Any

from tandem.sessions.compaction import (
    Policy,
    chat_turns,
    choose_first_kept,
    compaction_blocks_rewind,
    compaction_entry,
    next_turn,
    projected_tail,
)
from tandem.sessions.projection import project


def _dump(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in project(entries)]


def _random_journal(rng: random.Random, steps: int) -> list[dict[str, Any]]:
    """A journal grown the way the backend grows one: turns one at a time,
    directive spans, tool calls, crash repairs, rewinds and compactions."""
    out: list[dict[str, Any]] = []
    crashed: int | None = None
    for _ in range(steps):
        roll = rng.random()
        if roll < 0.08 and chat_turns(out):
            before = rng.randint(1, next_turn(out))
            if compaction_blocks_rewind(out, before) is None:
                out.append({"type": "rewind", "before_turn": before})
            continue
        if roll < 0.16:
            try:
                first = choose_first_kept(out, Policy(window=100_000,
                                                      keep_turns=rng.randint(0, 3)))
            except Exception:
                continue
            out.append(compaction_entry(f"summary {len(out)}", first, 1, 1))
            continue
        if crashed is not None:  # what the engine's repair writes before the next turn
            out.append({"type": "turn_end", "turn": crashed, "outcome": "aborted"})
            crashed = None
        n = next_turn(out)
        directive = rng.random() < 0.3
        out.append({"type": "turn_start", "turn": n,
                    "origin": "directive" if directive else "chat"})
        if directive:
            out.append({"type": "directive_open", "turn": n, "workspace": "w",
                        "directive": "D", "action": "implement"})
        out.append({"type": "user", "turn": n, "text": f"u{n}"})
        if rng.random() < 0.3:
            out.append({"type": "tool_call", "turn": n, "call_id": f"c{n}", "name": "read",
                        "input": {"p": n}})
            out.append({"type": "tool_result", "turn": n, "call_id": f"c{n}",
                        "status": "completed", "output": f"o{n}"})
        out.append({"type": "assistant", "turn": n, "text": f"a{n}"})
        if rng.random() < 0.1:
            crashed = n  # the backend died; the next accept repairs the turn
            continue
        if directive:
            out.append({"type": "directive_close", "turn": n, "directive": "D",
                        "outcome": "succeeded"})
        out.append({"type": "turn_end", "turn": n, "outcome": "succeeded"})
        if rng.random() < 0.1:
            out.append({"type": "acp_session", "acp_session_id": f"s{n}", "how": "new"})
    return out


def test_tail_projection_equals_full_projection_on_grown_journals() -> None:
    rng = random.Random(8)
    for _ in range(300):
        entries = _random_journal(rng, rng.randint(1, 60))
        for cut in range(0, len(entries) + 1, max(1, len(entries) // 7)):
            prefix = entries[:cut]
            assert _dump(list(projected_tail(prefix))) == _dump(prefix)


def test_tail_is_short_after_a_compaction() -> None:
    entries = _random_journal(random.Random(1), 0)
    for n in range(1, 200):
        entries += [{"type": "turn_start", "turn": n, "origin": "chat"},
                    {"type": "user", "turn": n, "text": "u"},
                    {"type": "turn_end", "turn": n, "outcome": "succeeded"}]
    assert projected_tail(entries) is entries
    entries.append(compaction_entry("s", 198, 1, 1))
    assert [e.get("turn") for e in projected_tail(entries)] == [198] * 3 + [199] * 3 + [None]
    entries.append(compaction_entry("s2", 0, 1, 1))  # nothing kept
    assert list(projected_tail(entries)) == [entries[-1]]
