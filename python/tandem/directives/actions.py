"""Which actions a directive offers, following its lifecycle (pure functions).

==================  =========================================================
discuss             always (read-only)
implement           no surviving attempt yet, or the request changed since
implement-this      at least one surviving discussion turn
discuss-result      at least one surviving attempt (one is chosen, default latest)
request-changes     the latest surviving attempt succeeded; feedback required
                    unless the request changed since that attempt
retry               the latest surviving attempt failed or was aborted
==================  =========================================================

An archived directive offers nothing until it is unarchived.
"""

from __future__ import annotations

from tandem.directives.models import ACTIONS, Attempt, DirectiveState
from tandem.protocol.base import TandemError


def latest_attempt(state: DirectiveState) -> Attempt | None:
    """The newest surviving attempt, or None."""
    return state.attempts[-1] if state.attempts else None


def available(state: DirectiveState) -> list[str]:
    """The actions STATE offers now, in menu order."""
    if state.archived:
        return []
    last = latest_attempt(state)
    out = ["discuss"]
    if last is None or state.request_changed:
        out.append("implement")
    if state.discussion:
        out.append("implement-this")
    if last is not None:
        out.append("discuss-result")
        if last.outcome == "succeeded":
            out.append("request-changes")
        else:
            out.append("retry")
    return [a for a in ACTIONS if a in out]


def _why_not(state: DirectiveState, action: str) -> str:
    last = latest_attempt(state)
    if state.archived:
        return f"{state.id} is archived; unarchive it first"
    if action == "implement":
        return (f"{state.id} already has attempt {last.seq if last else '?'}; use Implement this, "
                "Request changes or Retry, or edit the request")
    if action == "implement-this":
        return f"{state.id} has no discussion yet; Discuss first"
    if action == "discuss-result":
        return f"{state.id} has no attempt to discuss yet"
    if action == "request-changes":
        return (f"Request changes follows a successful attempt; {state.id}'s latest "
                + ("attempt did not succeed (use Retry)" if last else "has none"))
    if action == "retry":
        return (f"Retry follows a failed or aborted attempt; {state.id}'s latest "
                + ("attempt succeeded (use Request changes)" if last else "has none"))
    return f"{action} is not available"


def check(state: DirectiveState, action: str, text: str, attempt: int | None) -> Attempt | None:
    """Validate ACTION on STATE with TEXT and ATTEMPT; return the attempt it builds on.

    Raises `TandemError` (``unavailable`` or ``invalid``) saying why not.
    """
    if action not in ACTIONS:
        raise TandemError("invalid", f"Unknown action {action!r}: use one of {', '.join(ACTIONS)}")
    if action not in available(state):
        raise TandemError("unavailable", _why_not(state, action))
    if attempt is not None and action != "discuss-result":
        raise TandemError("invalid", f"Only discuss-result takes an attempt, not {action}")
    if action == "discuss-result":
        if attempt is None:
            return latest_attempt(state)
        chosen = next((a for a in state.attempts if a.seq == attempt), None)
        if chosen is None:
            raise TandemError("not-found", f"{state.id} has no surviving attempt {attempt}; it "
                              f"has {', '.join(str(a.seq) for a in state.attempts) or 'none'}")
        return chosen
    last = latest_attempt(state)
    if action == "request-changes":
        assert last is not None
        if not text.strip() and last.request == state.request:
            raise TandemError("invalid", "Request changes needs feedback: say what to change "
                              "(or edit the request first)")
        return last
    if action == "retry":
        return last
    return None
