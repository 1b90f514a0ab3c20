"""Session methods for Emacs: list, new, resume, open-file, switch, continue, entries…

Emacs asks the relocation question itself: it calls ``sessions/lookup``,
asks in the minibuffer when ``cwd_exists`` is false, then calls
``sessions/resume`` with ``relocate`` t or nil. Without an answer
(``relocate`` omitted) a lost session's resume fails with the
interactive-use instruction, as on a terminal without a TTY.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pydantic import Field

from tandem.protocol.base import MethodSpec, Params, Reply, TandemError
from tandem.sessions.manager import (
    Active,
    needs_terminal,
    relocation_prompt,
)
from tandem.store.jsonl import read_header
from tandem.store.models import entry_to_dict

if TYPE_CHECKING:
    from tandem.app import App


class SessionInfo(Reply):
    """An active session: identity, journal, recorded and active directory, settings."""

    id: str
    path: str
    cwd: str
    active_cwd: str
    relocated: bool
    previous_files: list[str]
    title: str
    writable: bool
    notices: list[str]
    settings: dict[str, Any]
    settings_warnings: list[str]
    """Settings that do not apply: untrusted project keys, invalid files."""
    remote: dict[str, Any] | None = None
    """Where the session executes when attached to an agent-server (its target: host,
    url, working dir), else nil: local."""


def _info(app: App, active: Active) -> SessionInfo:
    settings = app.sessions.manager.settings
    return SessionInfo(**active.describe(), settings=settings.effective,
                       settings_warnings=settings.warnings,
                       remote=_remote(app, active.journal.header.id))


def _remote(app: App, session: str) -> dict[str, Any] | None:
    target = app.remote.target_or_none(session)
    return target.model_dump() if target is not None else None


def _dir(text: str) -> str:
    if not text or not os.path.isabs(os.path.expanduser(text)):
        raise TandemError("invalid", f"cwd must be an absolute directory: {text!r}")
    return os.path.expanduser(text)


class ListParams(Params):
    """``cwd``: list this project's sessions; omit (or ``all``) for every project."""

    cwd: str | None = None
    all: bool = False


async def list_sessions(app: App, p: ListParams) -> list[dict[str, Any]]:
    """Sessions, most recent activity first."""
    cwd = None if p.all or not p.cwd else _dir(p.cwd)
    return [s.model_dump() for s in app.sessions.manager.list(cwd)]


class NewParams(Params):
    """Create a session in ``cwd`` titled ``title``."""

    cwd: str
    title: str = Field(default="", max_length=500)


async def new(app: App, p: NewParams) -> SessionInfo:
    """Create an empty session and make it active."""
    return _info(app, app.sessions.manager.new(_dir(p.cwd), p.title))


class LookupParams(Params):
    """Find session ``query`` (id or unique prefix) from the project ``cwd``."""

    query: str
    cwd: str


async def lookup(app: App, p: LookupParams) -> dict[str, Any]:
    """Id, journal, recorded cwd, whether it still exists, and the relocation question."""
    path = app.sessions.manager.find(p.query, _dir(p.cwd))
    header, _ = read_header(path)
    exists = os.path.isdir(header.cwd)
    return {
        "id": header.id,
        "path": str(path),
        "cwd": header.cwd,
        "cwd_exists": exists,
        "title": header.title,
        "prompt": None if exists else relocation_prompt(header.cwd),
    }


class ResumeParams(Params):
    """Resume ``query`` from ``cwd``; ``relocate`` is the user's answer, if asked."""

    query: str
    cwd: str
    relocate: bool | None = None


async def resume(app: App, p: ResumeParams) -> SessionInfo:
    """Resume by id; a lost directory needs ``relocate`` (t moves, nil cancels)."""
    m = app.sessions.manager
    answer = p.relocate

    def confirm(_question: str) -> bool:
        return bool(answer)

    if answer is None:
        path = m.find(p.query, _dir(p.cwd))
        header, _ = read_header(path)
        if not os.path.isdir(header.cwd):
            raise needs_terminal(header.id, header.cwd)
    # A declined move raises ResumeCancelled (code "cancelled", the exact sentence).
    return _info(app, m.resume_id(p.query, _dir(p.cwd), confirm))


class OpenFileParams(Params):
    """Open the journal at ``path`` directly, launched from ``cwd``."""

    path: str
    cwd: str


async def open_file(app: App, p: OpenFileParams) -> SessionInfo:
    """Open a journal file; never moves it (active cwd falls back to ``cwd``)."""
    return _info(app, app.sessions.manager.open_file(p.path, _dir(p.cwd)))


class SwitchParams(Params):
    """Switch the running session to ``target`` (journal path or id)."""

    target: str


async def switch(app: App, p: SwitchParams) -> SessionInfo:
    """Switch sessions; keeps the active directory when the target's is gone."""
    return _info(app, app.sessions.manager.switch(p.target))


class ContinueParams(Params):
    """Continue the latest session for ``cwd``."""

    cwd: str


async def continue_(app: App, p: ContinueParams) -> SessionInfo:
    """Continue: this project's latest session, else re-root a lost breadcrumb, else new."""
    return _info(app, app.sessions.manager.continue_recent(_dir(p.cwd)))


class CurrentParams(Params):
    """No parameters."""


async def current(app: App, p: CurrentParams) -> SessionInfo | None:
    """The active session, or nil."""
    active = app.sessions.manager.current
    return _info(app, active) if active else None


class EntriesParams(Params):
    """A page of ``session``'s entries: after seq ``after`` or before seq ``before``."""

    session: str
    after: int | None = Field(default=None, ge=0)
    before: int | None = Field(default=None, ge=1)
    limit: int = Field(default=200, ge=1, le=10000)


async def entries(app: App, p: EntriesParams) -> dict[str, Any]:
    """Entries as written, with the journal's last seq (for gap detection)."""
    journal = app.sessions.journal(p.session)
    page = journal.page(after=p.after, before=p.before, limit=p.limit)
    return {
        "session": journal.id,
        "entries": [entry_to_dict(e) for e in page],
        "last_seq": journal.last_seq,
    }


class RelocateParams(Params):
    """Re-root session ``target`` (id or path) into directory ``cwd``."""

    target: str
    cwd: str


async def relocate(app: App, p: RelocateParams) -> dict[str, Any]:
    """Move a session not open here; refused while another process holds it."""
    path = app.sessions.manager.relocate(p.target, _dir(p.cwd))
    header, _ = read_header(path)
    return {
        "id": header.id,
        "path": str(path),
        "cwd": header.cwd,
        "previous_files": header.previous_files,
    }


class CloseParams(Params):
    """Close ``session``: stop its providers and release its journal."""

    session: str


async def close(app: App, p: CloseParams) -> None:
    """Close one session: stop its providers (ACP agent processes), release its lock.

    Refused while a turn runs in it: cancel the turn first.
    """
    app.gate.check_free(p.session, "close")
    await app.turns.close_session(p.session)
    app.sessions.close(p.session)


METHODS: list[MethodSpec] = [
    MethodSpec("sessions/list", ListParams, list_sessions, "List sessions, newest first."),
    MethodSpec("sessions/new", NewParams, new, "Create a session.", SessionInfo),
    MethodSpec("sessions/lookup", LookupParams, lookup, "Find a session by id or prefix."),
    MethodSpec("sessions/resume", ResumeParams, resume, "Resume by id.", SessionInfo),
    MethodSpec(
        "sessions/open-file", OpenFileParams, open_file, "Open a journal file.", SessionInfo
    ),
    MethodSpec("sessions/switch", SwitchParams, switch, "Switch sessions.", SessionInfo),
    MethodSpec("sessions/continue", ContinueParams, continue_, "Continue here.", SessionInfo),
    MethodSpec("sessions/current", CurrentParams, current, "The active session."),
    MethodSpec("sessions/entries", EntriesParams, entries, "A page of entries."),
    MethodSpec("sessions/relocate", RelocateParams, relocate, "Re-root a session."),
    MethodSpec("sessions/close", CloseParams, close, "Close a session."),
]
