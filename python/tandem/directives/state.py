"""Fold a workspace log into directive states (pure functions).

Event kinds (each names its ``directive``):

========================  =====================================================
``directive_created``     ``request``, ``anchor``, ``references``
``request_edited``        ``request``
``anchor_updated``        ``anchor`` (moved, detached, source-missing, reattached)
``references_set``        ``references``
``bound``                 ``session``, ``rebind`` (bool)
``attempt_recorded``      ``attempt`` (an `Attempt`)
``discussion_recorded``   ``discussion`` (a `Discussion`)
``archived``              ``archived`` (bool)
========================  =====================================================

The lifecycle is derived, never stored: the latest *surviving* activity
decides it. An attempt or discussion turn whose ``(session, turn)`` a rewind
hid does not survive; it is listed under ``discarded`` instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from pydantic import ValidationError

from tandem.directives.models import (
    Attempt,
    DirectiveState,
    Discussion,
    Event,
    RequestEdit,
)
from tandem.directives.results import result_of
from tandem.protocol.directives import Anchor, DirectiveResult, Reference

ID_RE = re.compile(r"^D([1-9][0-9]{0,8})$")

Hidden = Mapping[str, set[int]]


class _Fold(TypedDict, total=False):
    """A `DirectiveState`'s fields while its events are folded, and the latest exchange."""

    id: str
    request: str
    anchor: Anchor
    references: list[Reference]
    created: str
    request_history: list[RequestEdit]
    session: str | None
    previous_sessions: list[str]
    attempts: list[Attempt]
    discussion: list[Discussion]
    discarded: dict[str, list[int]]
    archived: bool
    state: str
    request_changed: bool
    next_attempt: int
    next_discussion: int
    last_activity: int
    result: DirectiveResult | None
    latest: Attempt | Discussion
"""Turns hidden by rewinds, by session id."""


def next_directive_id(events: Iterable[Event]) -> str:
    """The next short id (``D1``, ``D2``…) after every id EVENTS created."""
    top = 0
    for e in events:
        if e.kind == "directive_created" and e.directive:
            m = ID_RE.match(e.directive)
            if m:
                top = max(top, int(m.group(1)))
    return f"D{top + 1}"


def _hidden(hidden: Hidden, session: str, turn: int) -> bool:
    return turn in hidden.get(session, set())


def fold(events: Iterable[Event], hidden: Hidden | None = None) -> dict[str, DirectiveState]:
    """Directive states by id, folded from EVENTS with the rewound turns HIDDEN."""
    hidden = hidden or {}
    # Folded into plain dicts, each made a model once at the end: a pydantic
    # attribute assignment costs ~2 µs, and a 2,000-event log makes 10,000.
    out: dict[str, _Fold] = {}
    for e in events:
        d = e.directive
        body = e.body()
        try:
            if e.kind == "directive_created" and d:
                request = str(body["request"])
                out[d] = {
                    "id": d, "request": request,
                    "anchor": Anchor.model_validate(body["anchor"]),
                    "references": [Reference.model_validate(r)
                                   for r in body.get("references") or []],
                    "created": e.ts,
                    "request_history": [{"seq": e.seq, "ts": e.ts, "request": request}],
                    "previous_sessions": [], "attempts": [], "discussion": [],
                    "discarded": {"attempts": [], "discussion": []}}
                continue
        except (KeyError, ValidationError):
            continue  # an unreadable creation: the directive does not exist
        state = out.get(d or "")
        if state is None:
            continue
        _apply(state, e, body, hidden)
    for state in out.values():  # only the latest exchange's result is ever made
        latest = state.pop("latest", None)
        if latest is not None:
            state["result"] = result_of(latest)
    return {d: DirectiveState.model_construct(None, **{**DEFAULTS, **state})
            for d, state in out.items()}


DEFAULTS: _Fold = {"session": None, "archived": False, "state": "ready",
                            "request_changed": False, "next_attempt": 1, "next_discussion": 1,
                            "last_activity": 0, "result": None}
"""The fields of a `DirectiveState` no creation sets (`model_construct` sets no default)."""


def _apply(state: _Fold, e: Event, body: dict[str, Any], hidden: Hidden) -> None:
    try:
        if e.kind == "request_edited":
            state["request"] = str(body["request"])
            state["request_history"].append({"seq": e.seq, "ts": e.ts,
                                             "request": state["request"]})
            state.update({"state": "ready", "request_changed": True, "last_activity": e.seq})
        elif e.kind == "anchor_updated":
            state["anchor"] = Anchor.model_validate(body["anchor"])
        elif e.kind == "references_set":
            refs = body.get("references") or []
            state["references"] = [Reference.model_validate(r) for r in refs]
        elif e.kind == "bound":
            session = str(body["session"])
            bound = state.get("session")
            if bound and bound != session:
                state["previous_sessions"].append(bound)
            state["session"] = session
        elif e.kind == "archived":
            state["archived"] = bool(body.get("archived"))
        elif e.kind == "attempt_recorded":
            attempt = Attempt.model_validate(body["attempt"])
            state["next_attempt"] = max(state.get("next_attempt", 1), attempt.seq + 1)
            if _hidden(hidden, attempt.session, attempt.turn):
                state["discarded"]["attempts"].append(attempt.seq)
                return
            state["attempts"] = [a for a in state["attempts"] if a.seq != attempt.seq] + [attempt]
            state["latest"] = attempt
            state.update({"state": "implemented" if attempt.outcome == "succeeded" else "failed",
                          "request_changed": False, "last_activity": e.seq})
        elif e.kind == "discussion_recorded":
            turn = Discussion.model_validate(body["discussion"])
            state["next_discussion"] = max(state.get("next_discussion", 1), turn.seq + 1)
            if _hidden(hidden, turn.session, turn.turn):
                state["discarded"]["discussion"].append(turn.seq)
                return
            state["discussion"] = [t for t in state["discussion"] if t.seq != turn.seq] + [turn]
            state["latest"] = turn
            if turn.outcome == "succeeded":  # a failed exchange decides nothing
                state.update({"state": "discussed", "request_changed": False,
                              "last_activity": e.seq})
    except (KeyError, ValidationError):
        return  # an unreadable event changes nothing; the log keeps it


def recorded_turns(events: Iterable[Event]) -> set[tuple[str, int]]:
    """Every ``(session, turn)`` that already has an attempt or discussion record."""
    done: set[tuple[str, int]] = set()
    for e in events:
        if e.kind in ("attempt_recorded", "discussion_recorded"):
            rec = e.body().get("attempt" if e.kind == "attempt_recorded" else "discussion")
            if isinstance(rec, dict) and isinstance(rec.get("turn"), int):
                done.add((str(rec.get("session")), rec["turn"]))
    return done


def bound_sessions(events: Iterable[Event]) -> set[str]:
    """Every session any directive of the log was ever bound to."""
    return {str(e.body().get("session")) for e in events if e.kind == "bound"}
