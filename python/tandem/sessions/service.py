"""The backend's sessions: the manager and the facts every layer asks of a session.

Its journal (opened on demand, kept open), its root (where its tools work),
its entries (parsed once, extended as the journal grows), its settings
(user, project, the front end's layer) and the choices made from them
(provider, permission mode). The turn engine, the workspace, compaction and
rewind all ask here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from tandem.config.front_end import FrontEnd
from tandem.config.layers import Resolved
from tandem.providers.base import PermissionMode
from tandem.sessions.choice import choose_permission_mode, choose_provider, resolve_for
from tandem.sessions.history import HistoryRows
from tandem.sessions.live_projection import LiveProjection
from tandem.sessions.manager import SessionManager
from tandem.store.entry_cache import EntryCache
from tandem.store.entry_view import JournalEntry
from tandem.store.journal import Journal
from tandem.store.turn_index import TurnIndex


class SessionService:
    """Sessions of one backend (see the module doc)."""

    def __init__(self, home: Path, breadcrumb_key: str = "emacs",
                 front_end: FrontEnd | None = None,
                 on_open: Iterable[Callable[[Journal], None]] = (),
                 on_relocated: Callable[[str, Path, Path], None] | None = None) -> None:
        self.home = Path(home)
        self.manager = SessionManager(self.home, breadcrumb_key=breadcrumb_key,
                                      on_open=on_open, on_relocated=on_relocated)
        self.entry_cache = EntryCache()
        """Parsed journals, shared by turns, compaction and rewind."""
        self.front_end = front_end if front_end is not None else FrontEnd()
        """The front end's configuration: its settings layer tops the files."""

    def journal(self, session: str) -> Journal:
        """The open journal of SESSION (an id or unique prefix; opened on demand, kept open)."""
        journal = self.manager.journal(session)
        self.manager.journals.setdefault(journal.id, journal)
        return journal

    def entries(self, journal: Journal) -> list[JournalEntry]:
        """JOURNAL's entries (the typed view), parsing only what was appended since last time."""
        return self.entry_cache.entries(journal.path)

    def index(self, journal: Journal) -> TurnIndex:
        """JOURNAL's entries by turn (built once per journal state; shared, read-only)."""
        return self.entry_cache.index(journal.path)

    def projection(self, journal: Journal) -> LiveProjection:
        """JOURNAL's ordinary-chat projection, extended by what was appended (shared, read-only)."""
        return self.entry_cache.view(journal.path, LiveProjection)

    def history(self, journal: Journal,
                factory: Callable[[], HistoryRows] = HistoryRows) -> HistoryRows:
        """JOURNAL's entries as history rows, extended by what was appended (shared, read-only).

        FACTORY makes the rows (a subclass keeps them printed); one per factory.
        """
        return self.entry_cache.view(journal.path, factory)

    def read_entries(self, path: Path) -> list[JournalEntry]:
        """The entries of the journal file at PATH, held or not ([] when unreadable)."""
        return self.entry_cache.read(path)

    def index_at(self, path: Path) -> TurnIndex:
        """The `TurnIndex` of the journal file at PATH (empty when unreadable)."""
        return self.entry_cache.index_at(path)

    def root_of(self, journal: Journal) -> Path:
        """Where JOURNAL's tools work: the active directory when it is the current session."""
        current = self.manager.current
        if current is not None and current.journal.id == journal.id:
            return Path(current.active_cwd)
        return Path(journal.header.cwd)

    def resolved(self, root: Path) -> Resolved:
        """ROOT's settings under this backend's trust store and the front end's layer."""
        return resolve_for(root, self.front_end.config, self.home)

    def settings(self, root: Path) -> dict[str, object]:
        """ROOT's effective settings as plain data."""
        return self.resolved(root).plain()

    def provider_for(self, settings: Mapping[str, object], requested: str | None) -> str:
        """The provider a request uses (see `choose_provider`)."""
        return choose_provider(settings, requested)

    def permission_mode(self, settings: Mapping[str, object],
                        requested: str | None) -> PermissionMode:
        """The permission mode a request runs under (see `choose_permission_mode`)."""
        return choose_permission_mode(settings, requested, self.front_end.config)

    def close(self, session: str | None = None) -> None:
        """Release SESSION's journal (every journal when None)."""
        self.manager.close(session)
