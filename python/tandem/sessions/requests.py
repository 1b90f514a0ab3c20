"""What the session methods ask of the sessions: look up, resume with an answer, pages.

Emacs asks the relocation question itself: it calls ``sessions/lookup``,
asks in the minibuffer when ``cwd_exists`` is false, then resumes with
``relocate`` t or nil. Without an answer (``relocate`` None) a lost
session's resume fails with the interactive-use instruction, as on a
terminal without a TTY.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from pydantic import BaseModel

from tandem.protocol.base import Printed, TandemError, Vector
from tandem.protocol.sessions import SessionInfo
from tandem.sessions.history import HistoryRows
from tandem.sessions.manager import Active, needs_terminal, relocation_prompt
from tandem.sessions.service import SessionService
from tandem.store.jsonl import read_header
from tandem.store.models import entry_to_dict


def absolute_dir(text: str) -> str:
    """TEXT as an absolute directory name (``~`` expanded); a clear error otherwise."""
    if not text or not os.path.isabs(os.path.expanduser(text)):
        raise TandemError("invalid", f"cwd must be an absolute directory: {text!r}")
    return os.path.expanduser(text)


def info(sessions: SessionService, target_of: Callable[[str], BaseModel | None],
         active: Active) -> SessionInfo:
    """ACTIVE described with the settings that apply and those that do not.

    TARGET_OF gives a session's remote target (None: it runs here).
    """
    settings = sessions.manager.settings
    target = target_of(active.journal.header.id)
    return SessionInfo(**active.describe(), settings=settings.effective,
                       settings_warnings=settings.warnings,
                       remote=target.model_dump() if target is not None else None)


def lookup(sessions: SessionService, query: str, cwd: str) -> dict[str, object]:
    """Id, journal, recorded cwd, whether it still exists, and the relocation question."""
    path = sessions.manager.find(query, absolute_dir(cwd))
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


def resume(sessions: SessionService, query: str, cwd: str, relocate: bool | None) -> Active:
    """Resume QUERY; a lost directory needs RELOCATE (True moves, False cancels)."""
    m = sessions.manager

    def confirm(_question: str) -> bool:
        return bool(relocate)

    if relocate is None:
        path = m.find(query, absolute_dir(cwd))
        header, _ = read_header(path)
        if not os.path.isdir(header.cwd):
            raise needs_terminal(header.id, header.cwd)
    # A declined move raises ResumeCancelled (code "cancelled", the exact sentence).
    return m.resume_id(query, absolute_dir(cwd), confirm)


def entries_page(sessions: SessionService, session: str, after: int | None,
                 before: int | None, limit: int) -> dict[str, object]:
    """A page of SESSION's entries as written, with the journal's last seq (gap detection)."""
    journal = sessions.journal(session)
    page = journal.page(after=after, before=before, limit=limit)
    return {
        "session": journal.id,
        "entries": [entry_to_dict(e) for e in page],
        "last_seq": journal.last_seq,
    }


def history_page(sessions: SessionService, session: str, before: int | None, limit: int,
                 factory: Callable[[], HistoryRows] = HistoryRows) -> dict[str, object]:
    """SESSION's entries before BEFORE in the compact form (`tandem.sessions.history`).

    When FACTORY's rows are kept printed, the entries are their kept text
    joined (`Printed`); otherwise one `Vector` per row.
    """
    journal = sessions.journal(session)
    journal.refresh()
    hist = sessions.history(journal, factory)
    span = hist.span(before, limit)
    entries: Printed | list[Vector]
    if hist.printer is None:
        entries = [Vector(hist.rows[i]) for i in span]
    else:
        kept = hist.printed
        picked = kept[span.start:span.stop] if isinstance(span, range) else [kept[i] for i in span]
        entries = Printed("(" + " ".join(picked) + ")")
    return {"session": journal.id, "entries": entries, "last_seq": journal.last_seq}


def relocate(sessions: SessionService, target: str, cwd: str) -> dict[str, object]:
    """Move a session not open here into CWD; its new identity facts."""
    path = sessions.manager.relocate(target, absolute_dir(cwd))
    header, _ = read_header(path)
    return {
        "id": header.id,
        "path": str(path),
        "cwd": header.cwd,
        "previous_files": header.previous_files,
    }
