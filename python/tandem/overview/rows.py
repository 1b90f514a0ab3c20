"""``sessions/overview``: every session of every project with its live state.

The listing (`SessionManager.list`) plus what this backend knows now: a turn
running, a permission question waiting for the user, the session open or
closed here, its directory gone. Rows that wait for the user come first,
then running ones, then the rest by last activity. Emacs refreshes it on
the events that change a state (``turn-started``, ``interaction``, the
``interaction_answer`` entry, ``turn-ended``).
"""

from __future__ import annotations

from collections.abc import Callable

from tandem.overview.facts import FactsCache
from tandem.protocol.sessions import Overview, OverviewRow, OverviewState
from tandem.providers.registry import parse_provider
from tandem.sessions.service import SessionService
from tandem.turns.engine import TurnEngine

_ORDER = {"waiting": 0, "running": 1}


def overview(sessions: SessionService, engine: TurnEngine, cache: FactsCache,
             cwd: str | None, host_of: Callable[[str], str | None] = lambda _s: None
             ) -> Overview:
    """Every session (only CWD's when given), those waiting for the user first.

    HOST_OF names the agent-server a session is attached to (None: it runs here).
    """
    manager = sessions.manager
    rows: list[OverviewRow] = []
    for s in manager.list(cwd):
        facts = cache.facts(s.path)
        running = engine.running.get(s.id)
        question = None
        if running is not None:
            pending = running.sink.pending
            state: OverviewState = "waiting" if pending else "running"
            question = _question(sessions, s.id, set(pending)) if pending else None
        elif s.damaged:
            state = "damaged"
        elif not s.cwd_exists:
            state = "directory-gone"
        else:
            state = "idle" if s.id in manager.journals else "closed"
        provider = running.spec.provider if running is not None else facts.provider
        host = host_of(s.id)
        rows.append(OverviewRow(
            id=s.id, path=s.path, title=s.title, cwd=s.cwd, last_activity=s.last_activity,
            state=state, question=question, turn=running.turn if running else None,
            provider=provider, engine="remote" if host else _engine(provider),
            host=host, turns=facts.turns,
            input_tokens=facts.input_tokens, output_tokens=facts.output_tokens,
            damaged=s.damaged))
    rows.sort(key=lambda r: _ORDER.get(r.state, 2))  # stable: newest first within each
    return Overview(rows=rows)


def _engine(provider: str) -> str:
    if not provider:
        return ""
    return "acp" if parse_provider(provider).family == "acp" else "native"


def _question(sessions: SessionService, session: str, pending: set[str]) -> str | None:
    """The title of SESSION's first waiting question (from its open journal's cache)."""
    for e in reversed(sessions.entries(sessions.journal(session))):
        if e["type"] == "interaction" and e["interaction_id"] in pending:
            return str(e.get("title") or e.get("tool") or "a question")
    return None
