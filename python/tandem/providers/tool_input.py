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


class _NonFinite(ValueError):
    """A non-finite number in the input; its text is the message."""


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)
    return value


def _invalid(raw: str, reason: str) -> dict[str, Any]:
    return {"_raw": raw[:RAW_KEPT], INVALID_INPUT: reason}


def _non_finite(token: str) -> str:
    return (f"it holds {token}, which is not a finite number (JSON has no NaN or "
            "Infinity); send finite numbers")


def parse_tool_input(raw: str) -> dict[str, Any]:
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


def checked_tool_input(value: Any) -> dict[str, Any]:
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
