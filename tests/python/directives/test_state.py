"""Folding the log: lifecycle, request edits, archive, rewinds; action availability rules."""

from __future__ import annotations

from typing import Any

import pytest

from tandem.directives.actions import available, check
from tandem.directives.models import Event
from tandem.directives.state import fold, next_directive_id
from tandem.protocol.base import TandemError

ANCHOR = {"path": "a.txt", "start_line": 1, "end_line": 1, "text": "x"}


def _events(*items: tuple[str, dict[str, Any]]) -> list[Event]:
    return [Event.model_validate({"kind": k, "seq": i, "ts": f"t{i}", "directive": "D1", **b})
            for i, (k, b) in enumerate(items, 1)]


def _attempt(seq: int, outcome: str, turn: int, session: str = "s") -> tuple[str, dict[str, Any]]:
    return ("attempt_recorded", {"attempt": {
        "seq": seq, "action": "implement", "request": "r", "prompt": "p", "outcome": outcome,
        "session": session, "turn": turn}})


def _discussion(seq: int, turn: int, outcome: str = "succeeded",
                attempt: int | None = None) -> tuple[str, dict[str, Any]]:
    return ("discussion_recorded", {"discussion": {
        "seq": seq, "action": "discuss", "request": "r", "prompt": "p", "outcome": outcome,
        "session": "s", "turn": turn, "attempt": attempt}})


CREATED = ("directive_created", {"request": "r", "anchor": ANCHOR, "references": []})


def test_lifecycle_follows_latest_surviving_activity() -> None:
    ev = _events(CREATED)
    s = fold(ev)["D1"]
    assert s.state == "ready" and available(s) == ["discuss", "implement"]
    ev = _events(CREATED, _discussion(1, 1))
    s = fold(ev)["D1"]
    assert s.state == "discussed"
    assert available(s) == ["discuss", "implement", "implement-this"]
    ev = _events(CREATED, _discussion(1, 1), _attempt(1, "succeeded", 2))
    s = fold(ev)["D1"]
    assert s.state == "implemented"
    assert available(s) == ["discuss", "implement-this", "discuss-result", "request-changes"]
    ev = _events(CREATED, _attempt(1, "aborted", 1))
    s = fold(ev)["D1"]
    assert s.state == "failed" and available(s) == ["discuss", "discuss-result", "retry"]
    # A failed discussion decides nothing.
    s = fold(_events(CREATED, _attempt(1, "failed", 1), _discussion(1, 2, "failed")))["D1"]
    assert s.state == "failed"


def test_request_edit_returns_to_ready_and_keeps_activity() -> None:
    ev = _events(CREATED, _attempt(1, "succeeded", 1), ("request_edited", {"request": "r2"}))
    s = fold(ev)["D1"]
    assert s.state == "ready" and s.request_changed and s.request == "r2"
    assert len(s.attempts) == 1 and [h["request"] for h in s.request_history] == ["r", "r2"]
    assert "implement" in available(s) and "request-changes" in available(s)
    # Feedback is optional only because the request changed since the attempt.
    assert check(s, "request-changes", "", None) is not None


def test_rewind_hides_attempts_and_rederives() -> None:
    ev = _events(CREATED, _attempt(1, "succeeded", 1), _attempt(2, "failed", 2),
                 _discussion(1, 3, attempt=2))
    s = fold(ev, {"s": {2, 3}})["D1"]
    assert [a.seq for a in s.attempts] == [1] and s.discussion == []
    assert s.discarded == {"attempts": [2], "discussion": [1]}
    assert s.state == "implemented" and s.next_attempt == 3
    # Another session's rewind hides nothing here.
    assert len(fold(ev, {"other": {1, 2, 3}})["D1"].attempts) == 2


def test_archive_and_binding() -> None:
    ev = _events(CREATED, ("bound", {"session": "a"}), ("bound", {"session": "b"}),
                 ("archived", {"archived": True}))
    s = fold(ev)["D1"]
    assert s.session == "b" and s.previous_sessions == ["a"] and s.archived
    assert available(s) == []
    with pytest.raises(TandemError, match="archived"):
        check(s, "discuss", "", None)


def test_bad_events_are_skipped_not_fatal() -> None:
    ev = _events(("directive_created", {"request": "r"}),  # no anchor: no directive
                 ("attempt_recorded", {"attempt": {"seq": "x"}}))
    assert fold(ev) == {}
    ev = _events(CREATED, ("attempt_recorded", {"attempt": {"seq": "x"}}), ("future_kind", {}))
    assert fold(ev)["D1"].attempts == []


def test_ids_are_short_and_increasing() -> None:
    assert next_directive_id([]) == "D1"
    ev = [Event.model_validate({"kind": "directive_created", "seq": 1, "ts": "t",
                                "directive": "D9"})]
    assert next_directive_id(ev) == "D10"


@pytest.mark.parametrize("action,text,attempt,code,words", [
    ("implement", "", None, "unavailable", "already has attempt 1"),
    ("retry", "", None, "unavailable", "use Request changes"),
    ("request-changes", "", None, "invalid", "needs feedback"),
    ("discuss-result", "", 7, "not-found", "no surviving attempt 7"),
    ("discuss", "", 1, "invalid", "Only discuss-result takes an attempt"),
    ("explode", "", None, "invalid", "Unknown action"),
])
def test_check_refusals(action: str, text: str, attempt: int | None, code: str,
                        words: str) -> None:
    s = fold(_events(CREATED, _attempt(1, "succeeded", 1)))["D1"]
    with pytest.raises(TandemError) as err:
        check(s, action, text, attempt)
    assert err.value.code == code and words in err.value.message


def test_check_refusals_before_any_activity() -> None:
    s = fold(_events(CREATED))["D1"]
    for action, words in (("implement-this", "Discuss first"),
                          ("discuss-result", "no attempt"),
                          ("request-changes", "has none"), ("retry", "has none")):
        with pytest.raises(TandemError, match=words):
            check(s, action, "x", None)
