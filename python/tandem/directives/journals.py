"""Read what the workspace needs from session journals' `TurnIndex`.

The journals are read through the sessions' one entry reader (without
taking their locks). Rewound turns are derived at read time from each
journal's ``rewind`` entries (nothing in the workspace log is deleted). A
journal that is gone hides nothing: its attempts stay visible in the record,
as the inspector needs them after the session file is lost.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any, NotRequired, TypedDict

from tandem.store.turn_index import TurnIndex


class DirectiveTurn(TypedDict):
    """One directive turn of a journal, as the workspace repairs its record from it."""

    turn: int
    directive: str
    action: str
    attempt: int | None
    closed: bool
    prompt: str
    answer: str
    checkpoint: str | None
    provider: str
    outcome: NotRequired[str]
    """Set once the directive span closed (its ``directive_close``)."""
    summary: NotRequired[str]
    ended: NotRequired[bool]
    """Set, with the three keys below, once the turn ended (its ``turn_end``)."""
    error: NotRequired[str | None]
    patch: NotRequired[Any]
    completeness: NotRequired[Any]


def hidden_turns(index: TurnIndex) -> set[int]:
    """Turns a ``rewind`` entry hides."""
    return set(index.hidden)


def directive_turns(index: TurnIndex, workspace: str,
                    skip: Container[int] = ()) -> list[DirectiveTurn]:
    """Each directive turn of WORKSPACE in INDEX as one dict, but the ended ones in SKIP.

    Keys: turn, directive, action, attempt, closed (bool), outcome, summary,
    prompt, answer, error, patch, completeness, checkpoint, provider.
    """
    out: list[DirectiveTurn] = []
    for turn in sorted(index.turns):
        rec = index.turns[turn]
        if turn in skip and "turn_end" in rec.last:
            continue  # recorded and ended: its texts are not gathered again
        opened = rec.directive_open
        if opened is None or opened.workspace != workspace:
            continue
        start = rec.start
        t: DirectiveTurn = {
            "turn": turn, "directive": opened.directive, "action": opened.action,
            "attempt": opened.attempt, "closed": False,
            "prompt": rec.user.text if rec.user is not None else "",
            "answer": "\n\n".join(rec.texts("assistant")),
            "checkpoint": start.checkpoint if start is not None else None,
            "provider": start.provider if start is not None else ""}
        close = rec.directive_close
        if close is not None:
            t.update({"closed": True, "outcome": close.outcome, "summary": close.summary})
        end = rec.last_end
        if end is not None:
            t.update({"ended": True, "error": end.error, "patch": end.patch,
                      "completeness": end.completeness})
        out.append(t)
    return out
