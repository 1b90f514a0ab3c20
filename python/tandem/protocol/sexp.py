"""S-expressions as Emacs prints and reads them, for the EPC transport.

Our own codec rather than sexpdata's: sexpdata 1.0.2 needs ≈136 ms to dump and
≈147 ms to load a 10k-element list here, and its ``Symbol`` type is a ``str``
subclass, so a symbol and a string are easy to confuse. This covers exactly the
subset Emacs' ``prin1`` produces for data: integers, floats, strings, symbols,
keywords, lists, dotted pairs and vectors.

Mapping (docs/architecture.md): Python ``dict`` → plist with ``:kebab-case``
keys; a plist arriving from Emacs → ``dict`` with ``snake_case`` keys; ``None``
and ``False`` → ``nil``; ``True`` → ``t``; vectors arrive as lists, and a
`tandem.protocol.base.Vector` leaves as one; a `tandem.protocol.base.Printed`
leaves as its text. A pydantic model leaves as its JSON dump, a ``RootModel``
as its root value, a `tandem.protocol.base.Verbatim` as its fields unchanged.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, RootModel

from tandem.protocol.base import Printed, Vector, Verbatim


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
_encode_string: Callable[[str], str] = json.encoder.encode_basestring

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


def _dump(value: Any, emit: Callable[[str], None]) -> None:
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
    elif t is Vector:
        # Thousands of these in one reply (a long history's rows): their
        # strings, integers and nils are written here, anything else by _dump.
        emit("[" + " ".join([_flat(item) for item in value]) + "]")
    elif t is Printed:
        emit(value)
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
    elif isinstance(value, RootModel):
        _dump(value.root, emit)  # a reply that is one value goes as that value
    elif isinstance(value, Verbatim):
        _dump({name: getattr(value, name) for name in type(value).model_fields}, emit)
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


def _flat(value: Any) -> str:
    """VALUE printed, in one string; a flat plist's values written here."""
    t = type(value)
    if t is str:
        return _encode_string(value)
    if t is int:
        return str(value)
    if value is None:
        return "nil"
    if t is dict and all(type(k) is str for k in value):
        return "(" + " ".join([_key(k) + " " + _flat_atom(v) for k, v in value.items()]) + ")"
    return dumps(value)


def _flat_atom(value: Any) -> str:
    t = type(value)
    if t is str:
        return _encode_string(value)
    if t is int:
        return str(value)
    return dumps(value)


MAX_DEPTH = 256
"""Deepest list nesting read; our protocol's data is a few levels deep."""
MAX_INT_DIGITS = 32
"""Longest integer read (int() is quadratic in digits and refuses >4300)."""
MAX_FLOAT_CHARS = 64
"""Longest float read; Emacs prints at most ~25 characters."""

# One token per match, and no repeated group in any branch: a repeated
# alternation such as (?:[^…]|\\.)+ makes sre save state per character
# (~300 bytes each, 4.6 GB for a 16 MB atom). Strings and atoms with
# escapes are scanned from one special character to the next instead.
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<open>[(\[])
  | (?P<close>[)\]])
  | (?P<str>")
  | (?P<atom>[^\s()\[\]"';\\]+)
  | (?P<esc>\\)
  | (?P<quote>')
  | (?P<comment>;[^\n]*)
    """,
    re.VERBOSE,
)
_ATOM_RUN = re.compile(r"""[^\s()\[\]"';\\]*""")
_ATOM_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_INT = re.compile(r"[+-]?[0-9]+\.?\Z")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:e[+-]?[0-9]+)?\Z", re.IGNORECASE)
_STR_ESCAPES = re.compile(
    r"\\(x[0-9a-fA-F]*(?:\\ )?|u[0-9a-fA-F]{0,4}|U[0-9a-fA-F]{0,8}|[0-7]{1,3}|\n|.)", re.DOTALL
)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "e": "\x1b", "a": "\a", "f": "\f", "s": " "}


def _char(code: int, esc: str) -> str:
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        raise SexpError(f"escape \\{esc[:12]} is not a Unicode character")
    return chr(code)


def _unescape(m: re.Match[str]) -> str:
    esc = m.group(1)
    if esc == "\n":  # backslash-newline is ignored inside strings
        return ""
    head = esc[0]
    if head == "x":
        digits = esc[1:].removesuffix("\\ ")
        if not 1 <= len(digits) <= 8:
            raise SexpError(f"bad escape \\x{digits[:12]}: 1 to 8 hex digits expected")
        return _char(int(digits, 16), esc)
    if head in "uU":
        want = 4 if head == "u" else 8
        if len(esc) != want + 1:
            raise SexpError(f"bad escape \\{esc}: {want} hex digits expected")
        return _char(int(esc[1:], 16), esc)
    if head.isdigit():
        return chr(int(esc, 8))
    return _SIMPLE_ESCAPES.get(esc, esc)


def _decode_string(body: str) -> str:
    if "\\" not in body:
        return body
    return _STR_ESCAPES.sub(_unescape, body)


def _string_end(text: str, start: int) -> int:
    """Index of the quote closing the string whose body starts at START.

    A quote closes the string when an even number of backslashes precedes
    it; each backslash run is walked once, so this is linear, and text
    without quotes inside costs one `str.find`.
    """
    find = text.find
    pos = start
    while True:
        q = find('"', pos)
        if q < 0:
            raise SexpError("unterminated string")
        k = q
        while k > start and text[k - 1] == "\\":
            k -= 1
        if (q - k) % 2 == 0:
            return q
        pos = q + 1


def _atom_end(text: str, pos: int) -> int:
    """Index just past the atom starting at POS (escapes included)."""
    run = _ATOM_RUN.match
    n = len(text)
    while True:
        pos = run(text, pos).end()  # type: ignore[union-attr]  # * always matches
        if pos < n and text[pos] == "\\":
            if pos + 1 >= n:
                raise SexpError("text ends inside an escape")
            pos += 2
            continue
        return pos


_SYMBOLS: dict[str, Symbol] = {}


def _atom(text: str) -> Any:
    if _INT.match(text):
        if len(text) > MAX_INT_DIGITS:
            raise SexpError(f"integer of {len(text)} characters is too long")
        return int(text.rstrip("."))
    if _FLOAT.match(text):
        if len(text) > MAX_FLOAT_CHARS:
            raise SexpError(f"float of {len(text)} characters is too long")
        value = float(text)
        if math.isinf(value):
            raise SexpError(f"float {text[:20]} is not finite")
        return value
    if text == "nil":
        return None
    if text == "t":
        return True
    sym = _SYMBOLS.get(text)
    if sym is None:
        sym = Symbol(_ATOM_ESCAPE.sub(r"\1", text) if "\\" in text else text)
        if len(_SYMBOLS) < 4096:  # bounded: message kinds and keys repeat, data does not
            _SYMBOLS[text] = sym
    return sym


def loads(text: str) -> Any:
    """Read one S-expression from TEXT; plists become dicts (see module doc).

    Linear in time and memory; raises `SexpError` for anything unreadable,
    nested deeper than `MAX_DEPTH`, or a number out of bounds.
    """
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
        if kind == "ws" or kind == "comment":
            continue
        if kind == "atom":
            if pos < n and text[pos] == "\\":
                pos = _atom_end(text, pos)
            stack[-1].append(_atom(text[m.start():pos]))
        elif kind == "str":
            end = _string_end(text, pos)
            stack[-1].append(_decode_string(text[pos:end]))
            pos = end + 1
        elif kind == "open":
            if len(kinds) >= MAX_DEPTH:
                raise SexpError(f"lists nested deeper than {MAX_DEPTH}")
            stack.append([])
            kinds.append(m.group())
        elif kind == "close":
            if not kinds:
                raise SexpError(f"unbalanced {m.group()!r} at offset {m.start()}")
            kinds.pop()
            items = stack.pop()
            stack[-1].append(_finish_list(items))
        elif kind == "esc":
            pos = _atom_end(text, m.start())
            stack[-1].append(_atom(text[m.start():pos]))
        else:
            raise SexpError("quoted forms are not data")
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
