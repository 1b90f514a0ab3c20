"""`loads_line` (msgspec first, the strict json decoder behind it) reads exactly what json reads.

The fast decoder must neither accept a line the strict json decoder refuses
(NaN, Infinity, an overflowing float, trailing bytes, bad UTF-8) nor change
what an accepted line means (big integers stay integers, a lone surrogate
escape still reads as json reads it).
"""

from __future__ import annotations

import json
import math

import pytest

from tandem.store.jsonl import loads_line

LINES = [
    b'{"type":"user","turn":1,"text":"caf\\u00e9 \xc3\xa9 \\ud83d\\ude00"}',
    b'{"n":123456789012345678901234567890,"m":-0,"f":1.5e300,"g":1E-5}',
    b'{"a":"\\ud800"}',  # a lone surrogate escape: json reads it, msgspec does not
    b'{"a":1,"a":2}',
    b'  {"a":[1,{"b":null}],"c":true}  \n',
    b"[1,2]",
    b'"text"',
]
BAD = [b'{"a":NaN}', b'{"a":Infinity}', b'{"a":-Infinity}', b'{"a":1e999}', b'{"a":-1e400}',
       b'{"a":1}x', b'{"a":"\xff"}', b'\xef\xbb\xbf{}', b"", b"{", b'{"a":01}']


def _strict_json(line: bytes) -> object:
    def refuse(name: str) -> object:
        raise ValueError(name)

    value = json.loads(line.decode("utf-8").strip(), parse_constant=refuse)
    if any(isinstance(v, float) and math.isinf(v) for v in _walk(value)):
        raise ValueError("inf")
    return value


def _walk(value: object) -> list[object]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _walk(v)]
    if isinstance(value, list):
        return [x for v in value for x in _walk(v)]
    return [value]


@pytest.mark.parametrize("line", LINES)
def test_accepted_lines_read_as_json_reads_them(line: bytes) -> None:
    got = loads_line(line)
    assert got == _strict_json(line)
    assert repr(got) == repr(_strict_json(line))  # same types: ints stay ints


@pytest.mark.parametrize("line", BAD)
def test_refused_lines_are_a_value_error(line: bytes) -> None:
    with pytest.raises(ValueError):
        _strict_json(line)
    with pytest.raises(ValueError):
        loads_line(line)
