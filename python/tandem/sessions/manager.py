"""The session manager: every entry path that makes a session active.

Entry paths and what each does when the session's recorded cwd is gone
(docs/sessions.md):

* `resume_id` (``tandem resume ID``, ``M-x tandem-resume``): asks the
  relocation question through the CONFIRM seam; yes (or empty) re-roots the
  session into the launch directory, no cancels, no seam (no terminal) fails.
* `open_file` (``tandem resume PATH``, the picker, ``M-x
  tandem-open-session-file``): never moves; the active cwd falls back to the
  launch directory.
* `switch` (``M-x tandem-switch-session``): never moves; keeps the current
  active directory.
* `continue_recent` (``tandem continue``): prefers the destination's own
  latest session; re-roots the breadcrumb's session automatically only when
  its project is gone and the destination has no history.

Adopting a session saves pending settings first (a failure stops the switch
and leaves the current session active), then reloads the cwd-scoped settings
and clears the cwd-scoped caches.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from tandem.protocol.base import TandemError
from tandem.sessions import breadcrumbs
from tandem.sessions.relocate import MoveOps, relocate
from tandem.sessions.settings import Settings
from tandem.store import layout
from tandem.store.ids import is_id_prefix
from tandem.store.journal import Journal
from tandem.store.jsonl import read_header
from tandem.store.listing import SessionSummary, list_sessions, summarize

_log = logging.getLogger(__name__)

CANCELLED = "Resume cancelled: session was not moved."
"""What a declined relocation prints (exactly)."""

Confirm = Callable[[str], bool]
"""The prompt seam: gets the question, returns the answer (True = move)."""


def relocation_prompt(cwd: str) -> str:
    """The relocation question for a session whose directory CWD is gone."""
    return (
        f"Session's directory no longer exists ({cwd}). "
        "Move (re-root) it into the current directory? [Y/n] "
    )


def parse_answer(text: str) -> bool:
    """A typed answer to the [Y/n] question: empty or y/yes accept."""
    return text.strip().lower() in ("", "y", "yes")


def needs_terminal(session_id: str, cwd: str) -> TandemError:
    """The error of the ID path when no one can be asked."""
    return TandemError(
        "needs-terminal",
        f"Session {session_id}'s directory no longer exists ({cwd}) and moving it needs "
        "your consent. Run `tandem resume ID` interactively on a terminal, or resume "
        "it in an interactive Emacs",
        {"id": session_id, "cwd": cwd},
        command="tandem-resume",
    )


class ResumeCancelled(TandemError):
    """The user declined the relocation: nothing moved, nothing opened."""

    def __init__(self) -> None:
        super().__init__("cancelled", CANCELLED)


class Identity(TypedDict):
    """An active session's identity, as every entry path replies it."""

    id: str
    path: str
    cwd: str
    active_cwd: str
    relocated: bool
    previous_files: list[str]
    title: str
    writable: bool
    notices: list[str]


@dataclass
class Active:
    """The active session: its journal and the directory tandem works in."""

    journal: Journal
    active_cwd: str
    relocated: bool = False
    notices: list[str] = field(default_factory=list)

    def describe(self) -> Identity:
        """The reply of every entry path (the CLI ``--json`` object plus extras)."""
        h = self.journal.header
        return {
            "id": h.id,
            "path": str(self.journal.path),
            "cwd": h.cwd,
            "active_cwd": self.active_cwd,
            "relocated": self.relocated,
            "previous_files": list(h.previous_files),
            "title": h.title,
            "writable": self.journal.writable,
            "notices": list(self.notices),
        }


class SessionManager:
    """Opens, creates, switches and re-roots sessions for one front end."""

    def __init__(
        self,
        home: Path,
        breadcrumb_key: str = "cli",
        user_settings: Path | None = None,
        move_ops: MoveOps | None = None,
        on_open: Iterable[Callable[[Journal], None]] = (),
        on_relocated: Callable[[str, Path, Path], None] | None = None,
    ) -> None:
        self.home = Path(home)
        self.on_relocated = on_relocated
        """Called with (session id, old root, new root) after each move (carries checkpoints)."""
        self.breadcrumb_key = breadcrumb_key
        self.settings = Settings(None, user_settings, home=self.home)
        self.move_ops = move_ops or MoveOps()
        self.current: Active | None = None
        self.journals: dict[str, Journal] = {}
        """Every journal this manager holds open, by session id."""
        self.caches: dict[str, object] = {}
        """cwd-scoped caches of other layers; cleared whenever the project changes."""
        self.on_open: tuple[Callable[[Journal], None], ...] = tuple(on_open)
        """Called with each journal this manager opens, before it is used (crash recovery)."""

    # -- lookup ----------------------------------------------------------------

    def find(self, query: str, launch_cwd: str) -> Path:
        """The journal of session id or unique id prefix QUERY.

        Looks in LAUNCH_CWD's project first, then in every project.
        """
        if not isinstance(query, str) or not is_id_prefix(query.strip().lower()):
            raise TandemError("invalid", f"Not a session id or id prefix: {query!r}")
        q = query.strip().lower()
        local = layout.slug_dir(self.home, _canon(launch_cwd))
        for folders in ([local], layout.slug_dirs(self.home)):
            hits = [
                p
                for folder in folders
                for p in layout.iter_journals(folder)
                if (parsed := layout.parse_journal_name(p.name)) and parsed[1].startswith(q)
            ]
            ids = {layout.parse_journal_name(p.name)[1] for p in hits}  # type: ignore[index]
            if len(ids) == 1:
                return sorted(hits)[0]
            if len(ids) > 1:
                raise TandemError(
                    "ambiguous",
                    f"{len(ids)} sessions start with {q!r}: "
                    + ", ".join(sorted(ids)[:5])
                    + ". Give more of the id.",
                )
        raise TandemError("not-found", f"No session with id {q!r}")

    def list(self, launch_cwd: str | None = None) -> list[SessionSummary]:
        """Sessions of LAUNCH_CWD's project (every project when None), newest first."""
        return list_sessions(self.home, _canon(launch_cwd) if launch_cwd else None)

    # -- entry paths -----------------------------------------------------------

    def new(self, cwd: str, title: str = "") -> Active:
        """Create an empty session in CWD and make it active."""
        canon = _canon(cwd)
        if not os.path.isdir(canon):
            raise TandemError("invalid", f"Not a directory: {canon}")
        self._save_settings()
        journal = Journal.create(self.home, canon, title)
        return self._adopt(journal, canon, relocated=False)

    def resume_id(self, query: str, launch_cwd: str, confirm: Confirm | None) -> Active:
        """Resume by id (or unique prefix); ask CONFIRM before re-rooting a lost session."""
        launch = _existing_dir(launch_cwd)
        path = self.find(query, launch)
        header, _ = read_header(path)
        if os.path.isdir(header.cwd):
            self._save_settings()
            return self._adopt(self._open(path), header.cwd, relocated=False)
        if confirm is None:
            raise needs_terminal(header.id, header.cwd)
        if not confirm(relocation_prompt(header.cwd)):
            raise ResumeCancelled()
        self._save_settings()
        self.close(header.id)  # held here (opened directly before): let the move take it
        moved = relocate(self.home, path, launch, self.move_ops)
        self._relocated(header.id, header.cwd, launch)
        journal = Journal.open(moved.path, writable=True, lock=moved.lock)
        return self._adopt(journal, launch, relocated=True)

    def open_file(self, path: str | Path, launch_cwd: str) -> Active:
        """Open the journal at PATH directly; never moves it.

        The active cwd is the recorded one if it exists, else LAUNCH_CWD.
        """
        launch = _existing_dir(launch_cwd)
        target = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
        header, _ = read_header(target)
        self._save_settings()
        active = header.cwd if os.path.isdir(header.cwd) else launch
        return self._adopt(self._open(target), active, relocated=False)

    def switch(self, target: str | Path) -> Active:
        """Switch the running session to TARGET (a journal path or an id).

        Never moves; when the target's directory is gone the current active
        directory stays. If saving the current settings fails, nothing changes.
        """
        here = self.current.active_cwd if self.current else os.getcwd()
        text = os.fspath(target)
        if text.endswith(layout.JOURNAL_SUFFIX) or os.sep in text:
            path = Path(os.path.abspath(os.path.expanduser(text)))
        else:
            path = self.find(text, here)
        header, _ = read_header(path)
        self._save_settings()
        active = header.cwd if os.path.isdir(header.cwd) else here
        return self._adopt(self._open(path), active, relocated=False)

    def continue_recent(self, launch_cwd: str) -> Active:
        """Continue in LAUNCH_CWD (see the module doc for the order of preference)."""
        launch = _existing_dir(launch_cwd)
        crumb = breadcrumbs.read(self.home, self.breadcrumb_key)
        crumb_path = Path(crumb.path) if crumb is not None else None
        crumb_header = None
        if crumb_path is not None and crumb_path.is_file():
            try:
                crumb_header, _ = read_header(crumb_path)
            except TandemError:
                crumb_header = None
        self._save_settings()
        if crumb_path and crumb_header is not None and crumb_header.cwd == launch:
            return self._adopt(self._open(crumb_path), launch, relocated=False)
        own = [r for r in self.list(launch) if not r.damaged]
        if own:
            return self._adopt(self._open(Path(own[0].path)), launch, relocated=False)
        if crumb_path and crumb_header is not None and not os.path.isdir(crumb_header.cwd):
            self.close(crumb_header.id)
            moved = relocate(self.home, crumb_path, launch, self.move_ops)
            self._relocated(crumb_header.id, crumb_header.cwd, launch)
            journal = Journal.open(moved.path, writable=True, lock=moved.lock)
            return self._adopt(journal, launch, relocated=True)
        return self._adopt(Journal.create(self.home, launch), launch, relocated=False)

    def relocate(self, target: str | Path, dest_cwd: str) -> Path:
        """Re-root the (not open) session at TARGET (path or id) into DEST_CWD."""
        text = os.fspath(target)
        if text.endswith(layout.JOURNAL_SUFFIX):
            path = Path(os.path.abspath(text))
        else:
            path = self.find(text, dest_cwd)
        header, _ = read_header(path)
        if header.id in self.journals:
            raise TandemError("busy", f"Session {header.id} is open here; close it before moving.")
        dest = _existing_dir(dest_cwd)
        moved = relocate(self.home, path, dest, self.move_ops)
        try:
            self._relocated(header.id, header.cwd, dest)
        finally:
            moved.lock.release()
        return moved.path

    def _relocated(self, session_id: str, old_cwd: str, new_cwd: str) -> None:
        """Tell `on_relocated` of a finished move; its failure never undoes the move."""
        if self.on_relocated is None:
            return
        try:
            self.on_relocated(session_id, Path(old_cwd), Path(new_cwd))
        except (OSError, TandemError) as e:  # not retried yet (docs/checkpoints.md)
            _log.warning("carrying checkpoints of %s failed: %s", session_id, e)

    # -- helpers ---------------------------------------------------------------

    def journal(self, session_id: str) -> Journal:
        """The open journal of SESSION_ID, opening it (writable if possible) on demand."""
        if session_id in self.journals:
            return self.journals[session_id]
        path = self.find(session_id, os.getcwd())
        journal = self._open(path)
        return self.journals.setdefault(journal.id, journal)

    def summary(self, session_id: str) -> SessionSummary | None:
        """The list summary of SESSION_ID's journal."""
        journal = self.journal(session_id)
        return summarize(journal.path)

    def close(self, session_id: str | None = None) -> None:
        """Close SESSION_ID's journal (every journal when None)."""
        ids = [session_id] if session_id else list(self.journals)
        for sid in ids:
            journal = self.journals.pop(sid, None)
            if journal is not None:
                journal.close()
            if self.current and self.current.journal.id == sid:
                self.current = None

    def _open(self, path: Path) -> Journal:
        header, _ = read_header(path)
        held = self.journals.get(header.id)
        if held is not None and held.path == path:
            return held
        journal = Journal.open(path, writable=True)
        try:
            for hook in self.on_open:
                hook(journal)
        except BaseException:
            journal.close()
            raise
        return journal

    def _save_settings(self) -> None:
        # Before any switch: a failure here must leave the current session active.
        self.settings.flush()

    def _adopt(self, journal: Journal, active_cwd: str, relocated: bool) -> Active:
        try:
            self.settings.reload_for_cwd(active_cwd)
        except BaseException:
            if self.journals.get(journal.id) is not journal:
                journal.close()
            raise
        self.journals[journal.id] = journal
        if self.current is None or self.current.active_cwd != active_cwd:
            self.caches.clear()
        self.current = Active(journal, active_cwd, relocated, list(journal.notices))
        breadcrumbs.write(
            self.home,
            self.breadcrumb_key,
            breadcrumbs.Breadcrumb(id=journal.id, path=str(journal.path), cwd=journal.header.cwd),
        )
        return self.current


def _canon(cwd: str) -> str:
    try:
        return layout.canonical_cwd(cwd)
    except (ValueError, TypeError) as exc:
        raise TandemError("invalid", f"Not a usable directory: {cwd!r} ({exc})") from None


def _existing_dir(cwd: str) -> str:
    canon = _canon(cwd)
    if not os.path.isdir(canon):
        raise TandemError("invalid", f"The current directory does not exist: {canon}")
    return canon
