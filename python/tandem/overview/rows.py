"""``sessions/overview``: every session of every project with its live state.

The listing (`SessionManager.list`) plus what this backend knows now: a turn
running, a permission question waiting for the user, the session open or
closed here, its directory gone. Rows that wait for the user come first,
then running ones, then the rest by last activity. Emacs refreshes it on
the events that change a state (``turn-started``, ``interaction``, the
``interaction_answer`` entry, ``turn-ended``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tandem.overview.facts import FactsCache
from tandem.protocol.base import TandemError
from tandem.protocol.parallel import ParallelSummary
from tandem.protocol.sessions import Overview, OverviewRow, OverviewState
from tandem.providers.registry import parse_provider
from tandem.sessions.service import SessionService
from tandem.turns.engine import TurnEngine

_ORDER = {"waiting": 0, "running": 1}


def overview(sessions: SessionService, engine: TurnEngine, cache: FactsCache,
             cwd: str | None, host_of: Callable[[str], str | None] = lambda _s: None,
             parallel: Mapping[str, ParallelSummary] | None = None) -> Overview:
    """Every session (only CWD's when given), grouped by project, waiting ones first.

    HOST_OF names the agent-server a session is attached to (None: it runs here).
    PARALLEL holds the parallel sessions' summaries by id: such a session is grouped
    under its project (and listed with CWD's when CWD is its project).
    """
    manager = sessions.manager
    parallel = parallel or {}
    rows: list[OverviewRow] = []
    listed = manager.list(cwd)
    if cwd is not None and parallel:
        mine = {sid for sid, p in parallel.items() if p.project == cwd}
        known = {s.id for s in listed}
        listed += [s for s in manager.list(None) if s.id in mine and s.id not in known]
    for s in listed:
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
            damaged=s.damaged, parallel=parallel.get(s.id),
            project=parallel[s.id].project if s.id in parallel else s.cwd))
    rows.sort(key=lambda r: _ORDER.get(r.state, 2))  # stable: newest first within each
    # One project's rows together, the projects in the order of their first row.
    first: dict[str, int] = {}
    for i, r in enumerate(rows):
        first.setdefault(r.project, i)
    rows.sort(key=lambda r: first[r.project])
    return Overview(rows=rows)


def _engine(provider: str) -> str:
    if not provider:
        return ""
    try:
        family = parse_provider(provider).family
    except TandemError:  # tandem's own turns (a landing) name no provider family
        return "tandem"
    return "acp" if family == "acp" else "native"


def _question(sessions: SessionService, session: str, pending: set[str]) -> str | None:
    """The title of SESSION's first waiting question (from its open journal's cache)."""
    for e in reversed(sessions.entries(sessions.journal(session))):
        if e["type"] == "interaction" and e["interaction_id"] in pending:
            return str(e.get("title") or e.get("tool") or "a question")
    return None
