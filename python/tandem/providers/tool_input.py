"""A model's tool input, from the JSON text (or object) of a provider stream.

JSON has no ``NaN`` or ``Infinity``, but Python's parser accepts them (and
``1e999`` overflows to infinity). Such a number must not reach a tool, the
journal or the next request body (httpx refuses to send it): the input is
replaced by a marker the executor answers as a failed call, with a sentence
the model can act on.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tandem.tools.base import INVALID_INPUT

RAW_KEPT = 2000
"""Characters of an unusable input kept (as ``_raw``) for the record."""

MAX_TOOL_INPUT = 16 << 20
"""Default bound (bytes) on one tool call's input JSON as it streams
(``native.max_tool_input_bytes``): room for the largest file ``write_file``
accepts, escaped, and no more."""

NAME_KEPT = 256
"""Characters of a streamed tool name or call id kept (real ones are under 64)."""

MAX_CALLS = 256
"""Tool calls (content blocks, for Anthropic) one model response may hold."""

INPUT_SIZE = "_size"
"""Key of an over-long input's marker holding its size in bytes (the bytes are gone)."""


class _NonFinite(ValueError):
    """A non-finite number in the input; its text is the message."""


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)
    return value


def _invalid(raw: str, reason: str) -> dict[str, object]:
    return {"_raw": raw[:RAW_KEPT], INVALID_INPUT: reason}


def _non_finite(token: str) -> str:
    return (f"it holds {token}, which is not a finite number (JSON has no NaN or "
            "Infinity); send finite numbers")


def _bytes(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n:,}-byte"


class InputBudget:
    """Bytes of tool input one model response may still stream (all its calls together).

    One bound for the response, not one per call: a model cannot get around
    it by spreading a huge argument over many calls.
    """

    __slots__ = ("left", "limit")

    def __init__(self, limit: int = MAX_TOOL_INPUT) -> None:
        self.limit = limit
        self.left = limit


class StreamedInput:
    """One tool call's input JSON as it streams, kept only while the budget lasts.

    Past the budget every piece kept is dropped (its bytes go back to the
    budget) and later ones are only counted: a hostile model's 100 MB
    argument never sits in memory, and the call's record holds its size,
    not its bytes.
    """

    __slots__ = ("budget", "dropped", "parts", "size")

    def __init__(self, budget: InputBudget) -> None:
        self.budget = budget
        self.parts: list[str] = []
        self.size = 0
        self.dropped = False

    def add(self, piece: str) -> None:
        """Count PIECE, and keep it while the budget allows."""
        n = len(piece) if piece.isascii() else len(piece.encode("utf-8", "replace"))
        self.size += n
        if self.dropped:
            return
        if n <= self.budget.left:
            self.budget.left -= n
            self.parts.append(piece)
            return
        self.dropped = True
        self.budget.left += self.size - n
        self.parts = []

    def value(self) -> dict[str, object]:
        """The input object, or the marker of an over-long or unusable input."""
        if self.dropped:
            return {INVALID_INPUT: (
                f"the input is {self.size:,} bytes, over the {_bytes(self.budget.limit)} limit "
                "on tool input in one model response (native.max_tool_input_bytes); it was "
                "dropped as it arrived. Split the work into smaller calls"),
                INPUT_SIZE: self.size}
        return parse_tool_input("".join(self.parts))


def kept_name(name: str, piece: str) -> str:
    """NAME with the streamed PIECE appended, bounded by `NAME_KEPT` characters."""
    return name + piece[: max(0, NAME_KEPT - len(name))] if len(name) < NAME_KEPT else name


def parse_tool_input(raw: str) -> dict[str, object]:
    """The tool input object in RAW (JSON text); an invalid-input marker when unusable."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _NonFinite as exc:
        return _invalid(raw, _non_finite(str(exc)))
    except ValueError:  # RecursionError is not one: a 100k-deep input is caught below
        return _invalid(raw, "it is not valid JSON; send a JSON object")
    except RecursionError:
        return _invalid(raw, "it is nested too deeply")
    if not isinstance(value, dict):
        return _invalid(raw, "it is not a JSON object; send an object of named arguments")
    return value


def checked_tool_input(value: Any) -> dict[str, object]:
    """VALUE (an input object a stream already parsed) if finite; else the marker."""
    if not isinstance(value, dict):
        return _invalid(repr(value), "it is not a JSON object; send an object of named arguments")
    bad = _first_non_finite(value)
    if bad is not None:
        return _invalid(repr(value), _non_finite(bad))
    return value


def _first_non_finite(value: Any) -> str | None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return "NaN" if math.isnan(item) else ("Infinity" if item > 0 else "-Infinity")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None
