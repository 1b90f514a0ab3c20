"""``sessions/overview``: every session of every project with its live state.

The listing (`SessionManager.list`) plus what this backend knows now: a turn
running, a permission question waiting for the user, the session open or
closed here, its directory gone. Rows that wait for the user come first,
then running ones, then the rest by last activity. Emacs refreshes it on
the events that change a state (``turn-started``, ``interaction``, the
``interaction_answer`` entry, ``turn-ended``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from tandem.protocol.base import MethodSpec, Params, Reply
from tandem.providers.registry import parse_provider

if TYPE_CHECKING:
    from tandem.app import App

State = Literal["waiting", "running", "idle", "closed", "directory-gone", "damaged"]
_ORDER = {"waiting": 0, "running": 1}


class OverviewParams(Params):
    """``cwd``: only this project's sessions; omit for every project."""

    cwd: str | None = None


class OverviewRow(Reply):
    """One session in the overview."""

    id: str
    path: str
    title: str
    cwd: str
    last_activity: str
    state: State
    question: str | None = None
    """The waiting question's title (state ``waiting``)."""
    turn: int | None = None
    """The running turn (states ``running`` and ``waiting``)."""
    provider: str = ""
    engine: str = ""
    """``remote`` (an agent-server), ``acp`` (an agent process) or ``native`` (tandem's
    own loop); "" before a turn of a local session."""
    host: str | None = None
    """The agent-server's name in ``tandem-remote-hosts`` (engine ``remote``)."""
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    damaged: str | None = None


class Overview(Reply):
    """Every session, those waiting for the user first."""

    rows: list[OverviewRow] = Field(default_factory=list)


async def overview(app: App, p: OverviewParams) -> Overview:
    """Handler of ``sessions/overview``."""
    sessions = app.sessions.manager
    engine = app.turns.engine
    cache = app.overview_facts
    attached = app.remote.attached()
    rows: list[OverviewRow] = []
    for s in sessions.list(p.cwd):
        facts = cache.facts(s.path)
        running = engine.running.get(s.id)
        question = None
        if running is not None:
            pending = running.sink.pending
            state: State = "waiting" if pending else "running"
            question = _question(app, s.id, set(pending)) if pending else None
        elif s.damaged:
            state = "damaged"
        elif not s.cwd_exists:
            state = "directory-gone"
        else:
            state = "idle" if s.id in sessions.journals else "closed"
        provider = running.spec.provider if running is not None else facts.provider
        target = app.remote.target_or_none(s.id) if s.id in attached else None
        rows.append(OverviewRow(
            id=s.id, path=s.path, title=s.title, cwd=s.cwd, last_activity=s.last_activity,
            state=state, question=question, turn=running.turn if running else None,
            provider=provider, engine="remote" if target else _engine(provider),
            host=target.host if target else None, turns=facts.turns,
            input_tokens=facts.input_tokens, output_tokens=facts.output_tokens,
            damaged=s.damaged))
    rows.sort(key=lambda r: _ORDER.get(r.state, 2))  # stable: newest first within each
    return Overview(rows=rows)


def _engine(provider: str) -> str:
    if not provider:
        return ""
    return "acp" if parse_provider(provider).family == "acp" else "native"


def _question(app: App, session: str, pending: set[str]) -> str | None:
    """The title of SESSION's first waiting question (from its open journal's cache)."""
    sessions = app.sessions
    for e in reversed(sessions.entries(sessions.journal(session))):
        if e.get("type") == "interaction" and e.get("interaction_id") in pending:
            return str(e.get("title") or e.get("tool") or "a question")
    return None


METHODS: list[MethodSpec] = [
    MethodSpec("sessions/overview", OverviewParams, overview,
               "Every session with its live state (waiting for you first).", Overview),
]
