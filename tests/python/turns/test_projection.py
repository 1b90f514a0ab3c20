"""Projection is pure: a journal's entries in, the chat context out (golden)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tandem.sessions.projection import project

GOLDEN = Path(__file__).parent / "golden"


def _turn(n: int, user: str, answer: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"type": "turn_start", "turn": n, "origin": "chat"},
            {"type": "user", "turn": n, "text": user},
            {"type": "assistant", "turn": n, "text": answer},
            {"type": "turn_end", "turn": n, "outcome": "succeeded"}]


def _directive(n: int, prompt: str, answer: str) -> list[dict[str, Any]]:
    return [{"type": "turn_start", "turn": n, "origin": "directive"},
            {"type": "directive_open", "turn": n, "directive": "D1", "action": "implement",
             "workspace": "w"},
            {"type": "user", "turn": n, "text": prompt},
            {"type": "assistant", "turn": n, "text": answer},
            {"type": "directive_close", "turn": n, "directive": "D1", "outcome": "succeeded"},
            {"type": "turn_end", "turn": n, "outcome": "succeeded"}]


JOURNAL: list[dict[str, Any]] = [
    *_turn(1, "hello", "hi there"),
    *_directive(2, "DIRECTIVE PROMPT: make f async", "DIRECTIVE ANSWER"),
    {"type": "turn_start", "turn": 3, "origin": "chat"},
    {"type": "user", "turn": 3, "text": "list files"},
    {"type": "assistant", "turn": 3, "text": "Let me look."},
    {"type": "tool_call", "turn": 3, "call_id": "c1", "name": "list_files", "input": {"path": "."}},
    {"type": "tool_result", "turn": 3, "call_id": "c1", "status": "completed", "output": "a.py"},
    {"type": "assistant", "turn": 3, "text": "There is a.py."},
    {"type": "turn_end", "turn": 3, "outcome": "succeeded"},
    *_turn(4, "rewound question", "rewound answer"),
    {"type": "rewind", "before_turn": 4},
    *_turn(5, "after rewind", "still here"),
    {"type": "some_future_type", "turn": 5, "payload": 1},
]


def _check_golden(name: str, value: Any) -> None:
    path = GOLDEN / f"{name}.json"
    text = json.dumps(value, indent=1, ensure_ascii=False) + "\n"
    if os.environ.get("TANDEM_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"golden {name} differs"


def test_projection_golden() -> None:
    messages = [m.model_dump(exclude_defaults=True) for m in project(JOURNAL)]
    _check_golden("projection", messages)


def test_projection_drops_directives_and_rewound_turns() -> None:
    text = json.dumps([m.model_dump() for m in project(JOURNAL)])
    assert "DIRECTIVE" not in text
    assert "rewound" not in text
    assert "after rewind" in text and "hello" in text


def test_turns_after_a_rewind_stay_visible() -> None:
    later = JOURNAL + _turn(6, "turn six", "six")
    assert "turn six" in json.dumps([m.model_dump() for m in project(later)])


def test_projection_starts_at_the_latest_compaction() -> None:
    compacted = JOURNAL + [{"type": "compaction", "summary": "SUMMARY", "first_kept_turn": 5,
                            "tokens_before": 100, "tokens_after": 10}] + _turn(6, "q6", "a6")
    messages = [m.model_dump(exclude_defaults=True) for m in project(compacted)]
    _check_golden("projection_compacted", messages)
    text = json.dumps(messages)
    assert "hello" not in text and "SUMMARY" in text and "after rewind" in text


def test_fast_messages_equal_validated_ones() -> None:
    from tandem.providers.base import Message

    for m in project(JOURNAL):
        again = Message.model_validate(m.model_dump())
        assert again == m and again.model_dump() == m.model_dump()
        assert m.model_copy().tool_calls == m.tool_calls
