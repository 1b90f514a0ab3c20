"""The JSON reader of settings: strict, and a key written twice is an error naming it.

``json.loads`` lets the last of two equal keys win, so a file can say one
thing where a reader looks and another where nobody does. Here any object
(at any depth) holding a key twice is refused, naming the key's dotted path
and the line of its second occurrence; ``NaN`` and ``Infinity`` are refused;
nesting deeper than the interpreter allows is refused by name.

The fast path is the C parser with a pairs hook; only when it finds a
duplicate does a second, pure-Python pass over the same text (the standard
library's decoder for each scalar, a small walk over objects and arrays)
find where it is.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tandem.protocol.base import TandemError

_WS = re.compile(r"[ \t\n\r]*")
_SCALARS = json.JSONDecoder(parse_constant=lambda name: None)
"""Reads one scalar where the locating pass meets one (its value is not kept)."""


class _Duplicate(Exception):
    """A key seen twice in one object (the C pass knows the key, not where)."""

    def __init__(self, key: str, path: tuple[str, ...] = (), pos: int = -1) -> None:
        super().__init__(key)
        self.key, self.path, self.pos = key, path, pos


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads(text: str, source: str) -> Any:
    """TEXT as JSON data; ``invalid-settings`` naming SOURCE when it is not strict JSON."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except _Duplicate as dup:
        found = _locate(text)
        if found is None:  # too deep for the locating pass: name the key alone
            where = f"duplicate key {dup.key}"
        else:
            line = text.count("\n", 0, found.pos) + 1
            where = f"duplicate key {'.'.join(found.path)} at line {line}"
        raise TandemError("invalid-settings", f"Settings {source}: {where} (a key may "
                          "appear only once in an object)") from None
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise TandemError("invalid-settings", f"Settings {source}: invalid JSON: {reason}"
                          ) from None


def _locate(text: str) -> _Duplicate | None:
    """The first duplicate key of TEXT with its path and offset (None: too deep to walk)."""
    try:
        _walk(text, 0, [])
    except _Duplicate as dup:
        return dup
    except (ValueError, RecursionError, IndexError):
        return None
    return None


def _skip(s: str, i: int) -> int:
    """The offset of the first character at or after I that is not JSON whitespace."""
    found = _WS.match(s, i)
    return found.end() if found else i


def _walk(s: str, i: int, path: list[str]) -> int:
    """Skip the value at S[I:], keeping PATH; the offset after it. Raises `_Duplicate`."""
    i = _skip(s, i)
    opener = s[i:i + 1]
    if opener not in ("{", "["):
        return _SCALARS.raw_decode(s, i)[1]  # a string, number or literal, as json reads it
    closer = "}" if opener == "{" else "]"
    i = _skip(s, i + 1)
    if s[i:i + 1] == closer:
        return i + 1
    seen: set[str] = set()
    index = 0
    while True:
        if opener == "{":
            start = i
            key, i = _SCALARS.raw_decode(s, i)
            if not isinstance(key, str):
                raise ValueError("a key must be a string")
            if key in seen:
                raise _Duplicate(key, (*path, key), start)
            seen.add(key)
            i = _skip(s, i)
            if s[i:i + 1] != ":":
                raise ValueError("expected ':'")
            i += 1
        else:
            key, index = str(index), index + 1
        path.append(key)
        i = _skip(s, _walk(s, i, path))
        path.pop()
        if s[i:i + 1] == closer:
            return i + 1
        if s[i:i + 1] != ",":
            raise ValueError("expected ','")
        i = _skip(s, i + 1)
