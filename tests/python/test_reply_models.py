"""Every method handler returns a reply model of `tandem.protocol` (its return annotation)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tandem.protocol.base import Count, Nothing, Reply
from tandem.protocol.sessions import SessionInfo
from tandem.server.table import build_table, reply_model, reply_of


def test_every_handler_returns_a_protocol_reply_model() -> None:
    table = build_table()
    assert len(table) > 50
    wrong = []
    for name, spec in sorted(table.items()):
        try:
            model = reply_model(spec.handler)
        except TypeError as e:
            wrong.append(f"{name}: {e}")
            continue
        if spec.reply is not None and spec.reply is not model:
            wrong.append(f"{name}: declared reply {spec.reply.__name__}, returns {model.__name__}")
    assert wrong == []


class _Outside(BaseModel):
    """A model of no protocol module."""


async def _dict(app: Any, p: Any) -> dict[str, Any]:
    return {}


async def _scalar(app: Any, p: Any) -> int:
    return 1


async def _outside(app: Any, p: Any) -> _Outside:
    return _Outside()


async def _two(app: Any, p: Any) -> SessionInfo | Count:
    return Count(1)


async def _bare(app: Any, p: Any):  # type: ignore[no-untyped-def]
    return None


async def _optional(app: App, p: Any) -> SessionInfo | None:  # noqa: F821 (App: type only)
    return None


async def _nothing(app: Any, p: Any) -> Nothing:
    return Nothing()


@pytest.mark.parametrize("handler", [_dict, _scalar, _outside, _two, _bare])
def test_the_checker_sees_a_violation(handler: Any) -> None:
    with pytest.raises(TypeError, match="not a reply model"):
        reply_model(handler)


def test_the_checker_accepts_a_model_an_optional_one_and_a_root_model() -> None:
    assert reply_model(_optional) is SessionInfo
    assert reply_of(_optional) == (SessionInfo, True)  # nil or the model
    assert reply_model(_nothing) is Nothing and reply_of(_nothing) == (Nothing, False)
    assert issubclass(SessionInfo, Reply)


def test_a_one_value_reply_goes_as_that_value() -> None:
    from tandem.protocol import sexp
    from tandem.protocol.base import Flag, Names, Printed, Text, Value, Vector
    from tandem.protocol.sessions import HistoryPage

    assert sexp.dumps(Nothing()) == "nil"
    assert sexp.dumps(Text("pong")) == '"pong"'
    assert sexp.dumps(Count(3)) == "3" and sexp.dumps(Flag(True)) == "t"
    assert sexp.dumps(Names(["a", "b"])) == '("a" "b")'
    # A symbol read from Emacs goes back a symbol, not a string.
    assert sexp.dumps(Value([sexp.Symbol("foo"), {"k": 1}])) == "(foo (:k 1))"
    # A page kept printed goes as its text; vectors as vectors.
    kept = HistoryPage.model_construct(session="s", entries=Printed("([1 \"a\"])"), last_seq=1)
    assert sexp.dumps(kept) == '(:session "s" :entries ([1 "a"]) :last-seq 1)'
    rows = HistoryPage(session="s", entries=[Vector((1, "a"))], last_seq=1)
    assert sexp.dumps(rows) == sexp.dumps(kept)
