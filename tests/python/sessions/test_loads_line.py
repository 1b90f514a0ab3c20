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


def test_a_chunk_reads_as_its_lines_read_one_by_one() -> None:
    """`parse_chunk`'s one-pass decode keeps exactly the entries `loads_line` makes of
    each line, whatever the chunk mixes (the lines above, blank lines, a CR LF end,
    entries missing required keys, the header)."""
    import random

    from tandem.store.entry_cache import _loads, parse_chunk

    entries = [b'{"type":"user","turn":1,"text":"hi \\u00e9","seq":2,"ts":"t"}',
               b'{"type":"turn_start","turn":1,"origin":"chat","seq":1,"ts":"t"}',
               b'{"type":"header","version":1}', b'{"type":"user","seq":3}',
               b'{"type":"future_kind","n":123456789012345678901234567890}',
               b'{"no_type":1}', b'{"type":"assistant","turn":1,"text":"x"}\r', b"   "]
    rng = random.Random(4)
    pool = entries * 4 + LINES + BAD
    for _ in range(300):
        lines = [rng.choice(pool if rng.random() < 0.3 else entries)
                 for _ in range(rng.randint(0, 12))]
        chunk = b"".join(line.rstrip(b"\n") + b"\n" for line in lines)
        one_by_one = [e for e in map(_loads, chunk.splitlines()) if e is not None]
        assert repr(parse_chunk(chunk)) == repr(one_by_one)
