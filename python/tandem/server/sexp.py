"""S-expressions as Emacs prints and reads them, for the EPC transport.

Our own codec rather than sexpdata's: sexpdata 1.0.2 needs ≈136 ms to dump and
≈147 ms to load a 10k-element list here, and its ``Symbol`` type is a ``str``
subclass, so a symbol and a string are easy to confuse. This covers exactly the
subset Emacs' ``prin1`` produces for data: integers, floats, strings, symbols,
keywords, lists, dotted pairs and vectors.

Mapping (docs/architecture.md): Python ``dict`` → plist with ``:kebab-case``
keys; a plist arriving from Emacs → ``dict`` with ``snake_case`` keys; ``None``
and ``False`` → ``nil``; ``True`` → ``t``; vectors arrive as lists.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel


class Symbol(str):
    """A Lisp symbol read from Emacs (``foo``, ``:key``); distinct from a string."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Symbol({str(self)!r})"


class SexpError(ValueError):
    """Raised for text that is not a readable S-expression, or unencodable data."""


# The C string encoder of the json module writes exactly what Emacs reads:
# it escapes " and \ and control characters (\n, \t, \u00NN) and keeps
# other characters raw. It is several times faster than a regex substitution.
_encode_string: Any = json.encoder.encode_basestring  # type: ignore[attr-defined]

_KEYS: dict[str, str] = {}


def _key(name: str) -> str:
    key = _KEYS.get(name)
    if key is None:
        if len(_KEYS) < 4096:  # bounded: keys are field names, not data
            key = _KEYS[name] = ":" + name.replace("_", "-")
        else:
            key = ":" + name.replace("_", "-")
    return key


def dumps(value: Any) -> str:
    """Return VALUE printed as an S-expression Emacs' ``read`` accepts."""
    out: list[str] = []
    _dump(value, out.append)
    return "".join(out)


def _dump(value: Any, emit: Any) -> None:
    # Dispatch on the exact type first: this runs once per value of every
    # reply, and a 10k-element reply must encode in a few milliseconds.
    t = type(value)
    if t is str:
        emit(_encode_string(value))
    elif t is int:
        emit(str(value))
    elif t is dict:
        emit("(")
        first = True
        for k, v in value.items():
            if not isinstance(k, str):
                raise SexpError(f"cannot encode non-string key {k!r}")
            emit(_key(k) + " " if first else " " + _key(k) + " ")
            first = False
            _dump(v, emit)
        emit(")")
    elif t is list or t is tuple:
        emit("(")
        first = True
        for item in value:
            if not first:
                emit(" ")
            first = False
            _dump(item, emit)
        emit(")")
    elif value is None or value is False:
        emit("nil")
    elif value is True:
        emit("t")
    elif t is Symbol:
        emit(str(value))
    elif t is float:
        if math.isnan(value) or math.isinf(value):
            raise SexpError(f"cannot encode non-finite float {value!r}")
        emit(repr(value))
    elif isinstance(value, BaseModel):
        _dump(value.model_dump(mode="json"), emit)
    elif isinstance(value, Mapping):
        _dump(dict(value), emit)
    elif isinstance(value, str):
        emit(_encode_string(str(value)))
    elif isinstance(value, int):
        emit(str(int(value)))
    elif isinstance(value, (list, tuple)):
        _dump(list(value), emit)
    else:
        raise SexpError(f"cannot encode value of type {type(value).__name__}")


_TOKEN = re.compile(
    r"""
    (?P<ws>[\s]+|;[^\n]*)
  | (?P<open>[(\[])
  | (?P<close>[)\]])
  | (?P<str>"[^"\\]*(?:\\.[^"\\]*)*")
  | (?P<quote>')
  | (?P<atom>(?:[^\s()\[\]"';\\]|\\.)+)
    """,
    re.VERBOSE | re.DOTALL,
)
_INT = re.compile(r"[+-]?\d+\.?\Z")
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:e[+-]?\d+)?\Z", re.IGNORECASE)
_STR_ESCAPES = re.compile(
    r"\\(x[0-9a-fA-F]+\\? ?|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|\n|.)", re.DOTALL
)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "e": "\x1b", "a": "\a", "f": "\f", "s": " "}


def _decode_string(body: str) -> str:
    if "\\" not in body:
        return body

    def repl(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc == "\n":  # backslash-newline is ignored inside strings
            return ""
        if esc[0] == "x":
            return chr(int(esc[1:].rstrip("\\ "), 16))
        if esc[0] in "uU" and len(esc) > 1:
            return chr(int(esc[1:], 16))
        if esc[0].isdigit():
            return chr(int(esc, 8))
        return _SIMPLE_ESCAPES.get(esc, esc)

    return _STR_ESCAPES.sub(repl, body)


def _atom(text: str) -> Any:
    if _INT.match(text):
        return int(text.rstrip("."))
    if _FLOAT.match(text):
        return float(text)
    if text == "nil":
        return None
    if text == "t":
        return True
    return Symbol(text.replace("\\", "") if "\\" in text else text)


def loads(text: str) -> Any:
    """Read one S-expression from TEXT; plists become dicts (see module doc)."""
    stack: list[list[Any]] = [[]]
    kinds: list[str] = []
    pos = 0
    n = len(text)
    match = _TOKEN.match
    while pos < n:
        m = match(text, pos)
        if m is None:
            raise SexpError(f"unreadable text at offset {pos}: {text[pos:pos + 20]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        if kind == "open":
            stack.append([])
            kinds.append(m.group())
        elif kind == "close":
            if not kinds:
                raise SexpError(f"unbalanced {m.group()!r} at offset {m.start()}")
            kinds.pop()
            items = stack.pop()
            stack[-1].append(_finish_list(items))
        elif kind == "str":
            stack[-1].append(_decode_string(m.group()[1:-1]))
        elif kind == "quote":
            raise SexpError("quoted forms are not data")
        else:
            stack[-1].append(_atom(m.group()))
    if kinds:
        raise SexpError("unterminated list")
    top = stack[0]
    if len(top) != 1:
        raise SexpError(f"expected one expression, found {len(top)}")
    return top[0]


def _finish_list(items: list[Any]) -> Any:
    # A dotted pair arrives as (a . b): keep it as a two-element list.
    if len(items) == 3 and items[1] == Symbol("."):
        return [items[0], items[2]]
    if items and len(items) % 2 == 0 and all(
        isinstance(k, Symbol) and k.startswith(":") and len(k) > 1 for k in items[::2]
    ):
        pairs = zip(items[::2], items[1::2], strict=True)
        return {str(k)[1:].replace("-", "_"): v for k, v in pairs}
    return items
