"""Tool input from a stream: non-finite numbers and non-objects become a marked error."""

from __future__ import annotations

import json
import math

import pytest

from tandem.providers.tool_input import checked_tool_input, parse_tool_input
from tandem.tools.base import INVALID_INPUT


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"limit": NaN}', "NaN, which is not a finite number"),
        ('{"a": [1, {"b": -Infinity}]}', "-Infinity, which is not a finite number"),
        ('{"limit": 1e999}', "1e999, which is not a finite number"),
        ('{"path": "a.txt"', "not valid JSON"),
        ('["a.txt"]', "not a JSON object"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_unusable_input_is_marked_with_a_reason(raw: str, reason: str) -> None:
    got = parse_tool_input(raw)
    assert reason in got[INVALID_INPUT]
    assert len(got["_raw"]) <= 2000
    json.dumps(got, allow_nan=False)  # nothing non-finite left to journal or send


def test_good_input_passes_unchanged() -> None:
    assert parse_tool_input('{"path": "a.txt", "limit": 2.5}') == {"path": "a.txt", "limit": 2.5}
    assert parse_tool_input("  ") == {}
    assert checked_tool_input({"n": [1.0, {"x": 2}]}) == {"n": [1.0, {"x": 2}]}


def test_an_already_parsed_object_is_checked_too() -> None:
    got = checked_tool_input({"n": [1.0, {"x": math.nan}]})
    assert "NaN, which is not a finite number" in got[INVALID_INPUT]
    json.dumps(got, allow_nan=False)
