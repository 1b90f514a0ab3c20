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
from typing import Any

from pydantic import ValidationError

from tandem.protocol.directives import Anchor, Reference
from tandem.workspace.models import Attempt, DirectiveState, Discussion, Event

ID_RE = re.compile(r"^D([1-9][0-9]{0,8})$")

Hidden = Mapping[str, set[int]]
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
    out: dict[str, DirectiveState] = {}
    for e in events:
        d = e.directive
        body = e.model_dump()
        try:
            if e.kind == "directive_created" and d:
                out[d] = DirectiveState(
                    id=d, request=str(body["request"]),
                    anchor=Anchor.model_validate(body["anchor"]),
                    references=[Reference.model_validate(r) for r in body.get("references") or []],
                    created=e.ts,
                    request_history=[{"seq": e.seq, "ts": e.ts, "request": body["request"]}])
                continue
        except (KeyError, ValidationError):
            continue  # an unreadable creation: the directive does not exist
        state = out.get(d or "")
        if state is None:
            continue
        _apply(state, e, body, hidden)
    return out


def _apply(state: DirectiveState, e: Event, body: dict[str, Any], hidden: Hidden) -> None:
    try:
        if e.kind == "request_edited":
            state.request = str(body["request"])
            state.request_history.append({"seq": e.seq, "ts": e.ts, "request": state.request})
            state.state, state.request_changed, state.last_activity = "ready", True, e.seq
        elif e.kind == "anchor_updated":
            state.anchor = Anchor.model_validate(body["anchor"])
        elif e.kind == "references_set":
            refs = body.get("references") or []
            state.references = [Reference.model_validate(r) for r in refs]
        elif e.kind == "bound":
            session = str(body["session"])
            if state.session and state.session != session:
                state.previous_sessions.append(state.session)
            state.session = session
        elif e.kind == "archived":
            state.archived = bool(body.get("archived"))
        elif e.kind == "attempt_recorded":
            attempt = Attempt.model_validate(body["attempt"])
            state.next_attempt = max(state.next_attempt, attempt.seq + 1)
            if _hidden(hidden, attempt.session, attempt.turn):
                state.discarded["attempts"].append(attempt.seq)
                return
            state.attempts = [a for a in state.attempts if a.seq != attempt.seq] + [attempt]
            state.state = "implemented" if attempt.outcome == "succeeded" else "failed"
            state.request_changed, state.last_activity = False, e.seq
        elif e.kind == "discussion_recorded":
            turn = Discussion.model_validate(body["discussion"])
            state.next_discussion = max(state.next_discussion, turn.seq + 1)
            if _hidden(hidden, turn.session, turn.turn):
                state.discarded["discussion"].append(turn.seq)
                return
            state.discussion = [t for t in state.discussion if t.seq != turn.seq] + [turn]
            if turn.outcome == "succeeded":  # a failed exchange decides nothing
                state.state, state.request_changed, state.last_activity = (
                    "discussed", False, e.seq)
    except (KeyError, ValidationError):
        return  # an unreadable event changes nothing; the log keeps it


def recorded_turns(events: Iterable[Event]) -> set[tuple[str, int]]:
    """Every ``(session, turn)`` that already has an attempt or discussion record."""
    done: set[tuple[str, int]] = set()
    for e in events:
        if e.kind in ("attempt_recorded", "discussion_recorded"):
            rec = e.model_dump().get("attempt" if e.kind == "attempt_recorded"
                                     else "discussion")
            if isinstance(rec, dict) and isinstance(rec.get("turn"), int):
                done.add((str(rec.get("session")), rec["turn"]))
    return done


def bound_sessions(events: Iterable[Event]) -> set[str]:
    """Every session any directive of the log was ever bound to."""
    return {str(e.model_dump().get("session")) for e in events if e.kind == "bound"}
