"""What the turn engine reads about a session: one typed collaborator, not five callables.

`SessionFacts` is the engine's view of the sessions layer: a journal's root, its
entries, its entries by turn, its chat context, and a root's protected paths.
`JournalFacts` reads them from the journal alone (a test's engine, a tool that has
no session service); the turn service passes one backed by its caches.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tandem.config.model import DEFAULT_PROTECTED_PATHS
from tandem.providers.base import Message
from tandem.sessions.projection import project
from tandem.store.entry_cache import journal_dicts
from tandem.store.entry_view import JournalEntry
from tandem.store.journal import Journal
from tandem.store.turn_index import TurnIndex

if TYPE_CHECKING:
    from tandem.sessions.service import SessionService


class SessionFacts(Protocol):
    """The facts about a session a turn needs, read afresh for each turn."""

    def root_of(self, journal: Journal) -> Path:
        """The folder JOURNAL's turns run in."""
        ...

    def entries(self, journal: Journal) -> list[JournalEntry]:
        """JOURNAL's entries, typed."""
        ...

    def index(self, journal: Journal) -> TurnIndex:
        """JOURNAL's entries by turn."""
        ...

    def context(self, journal: Journal) -> list[Message]:
        """JOURNAL's chat context: what the next request carries."""
        ...

    def protected(self, root: Path) -> tuple[str, ...]:
        """ROOT's ``protected_paths`` setting."""
        ...


class JournalFacts:
    """`SessionFacts` from the journal alone, with the default protected paths."""

    def root_of(self, journal: Journal) -> Path:
        """The folder the journal's header names."""
        return Path(journal.header.cwd)

    def entries(self, journal: Journal) -> list[JournalEntry]:
        """Every entry, read from the journal."""
        return journal_dicts(journal)

    def index(self, journal: Journal) -> TurnIndex:
        """The entries by turn, built afresh."""
        return TurnIndex(self.entries(journal))

    def context(self, journal: Journal) -> list[Message]:
        """The projection of every entry."""
        return project(self.entries(journal))

    def protected(self, root: Path) -> tuple[str, ...]:
        """The built-in list: no settings are read."""
        return DEFAULT_PROTECTED_PATHS


class ServiceFacts:
    """`SessionFacts` from the session service's caches (incremental entries, index and
    projection; the root's resolved settings)."""

    def __init__(self, sessions: SessionService) -> None:
        self._sessions = sessions

    def root_of(self, journal: Journal) -> Path:
        """The session's current root (it follows a moved project)."""
        return self._sessions.root_of(journal)

    def entries(self, journal: Journal) -> list[JournalEntry]:
        """The cached entries."""
        return self._sessions.entries(journal)

    def index(self, journal: Journal) -> TurnIndex:
        """The cache's shared index."""
        return self._sessions.index(journal)

    def context(self, journal: Journal) -> list[Message]:
        """The incremental projection's messages."""
        return self._sessions.projection(journal).messages()

    def protected(self, root: Path) -> tuple[str, ...]:
        """ROOT's setting, resolved afresh (the user may have changed it)."""
        return self._sessions.resolved(root).settings.protected()
