"""One gate per backend: who holds a session, and why.

A session is held by at most one thing at a time: a turn (from its
acceptance to its terminal path), a rewind (plan, files, entry), a
compaction (summary, entry) or the revert of a reviewed change (files,
entry). Whoever asks while it is held gets one ``busy`` error that names
the holder. The same module holds the one check
every writer of a session makes first (`writable_root`): the journal takes
writes and the session's directory is still there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tandem.protocol.base import TandemError
from tandem.protocol.errors import Command
from tandem.store.journal import Journal

Purpose = Literal["turn", "rewind", "compaction", "revert"]
"""Why a session is held."""
Wanted = Literal["turn", "rewind", "compaction", "close", "revert", "attach", "detach"]
"""What the caller that finds it held wants to do."""


@dataclass
class Hold:
    """One holder of one session."""

    session: str
    purpose: Purpose
    started: bool = False
    """For a turn: accepted and running (False while it is being started)."""


_TURN_RUNNING: dict[Wanted, str] = {
    "turn": "A turn is already running in session {sid}; cancel it first",
    "rewind": "A turn is running in session {sid}; rewind when it has ended, or cancel it",
    "compaction": "A turn is running in session {sid}; compact when it has ended, "
                  "or cancel it",
    "close": "A turn is running in session {sid}; cancel it first",
    "revert": "A turn is running in session {sid}; revert when it has ended",
    "attach": "A turn is running in session {sid}; attach it to a host when the turn has "
              "ended, or cancel it",
    "detach": "A turn is running in session {sid}; detach it when the turn has ended, "
              "or cancel it",
}
_OTHER: dict[tuple[Purpose, Wanted], str] = {
    ("rewind", "rewind"): "Session {sid} is already being rewound",
    ("rewind", "turn"): "Session {sid} is being rewound; send again when it is done",
    ("compaction", "compaction"): "Session {sid} is already being compacted",
    ("compaction", "turn"): "Session {sid} is being compacted; send again when it is done, "
                            "or cancel the compaction",
    ("compaction", "rewind"): "Session {sid} is being compacted; rewind when it is done",
    ("revert", "turn"): "Session {sid} is reverting a change; send again when done",
}


def busy_command(hold: Hold) -> Command | None:
    """The Emacs command that frees a session HOLD holds (messages name no keys)."""
    if hold.purpose == "turn" and hold.started:
        return "tandem-cancel-turn"
    if hold.purpose == "compaction":
        return "tandem-compact-cancel"
    return None


def busy_message(hold: Hold, wanted: Wanted) -> str:
    """The sentence for WANTED refused because HOLD holds the session."""
    sid = hold.session
    if hold.purpose == "turn":
        if not hold.started:
            return f"A turn is being started in session {sid}; wait for it or cancel it"
        return _TURN_RUNNING[wanted].format(sid=sid)
    text = _OTHER.get((hold.purpose, wanted))
    if text is None:
        doing = {"rewind": "being rewound", "compaction": "being compacted",
                 "revert": "reverting a change"}[hold.purpose]
        text = "Session {sid} is " + doing + "; try again when it is done"
    return text.format(sid=sid)


class SessionGate:
    """The holders of this backend's sessions (see the module doc)."""

    def __init__(self) -> None:
        self._holds: dict[str, Hold] = {}

    def holder(self, session: str) -> Hold | None:
        """Who holds SESSION now (None: free)."""
        return self._holds.get(session)

    def holds(self, session: str, purpose: Purpose) -> bool:
        """Whether SESSION is held for PURPOSE."""
        hold = self._holds.get(session)
        return hold is not None and hold.purpose == purpose

    def check_free(self, session: str, wanted: Wanted) -> None:
        """Raise ``busy`` (naming the holder) unless SESSION is free."""
        hold = self._holds.get(session)
        if hold is not None:
            raise TandemError("busy", busy_message(hold, wanted), command=busy_command(hold))

    def acquire(self, session: str, purpose: Purpose) -> Hold:
        """Hold SESSION for PURPOSE until `release`; ``busy`` when someone holds it."""
        self.check_free(session, purpose)
        hold = Hold(session, purpose)
        self._holds[session] = hold
        return hold

    def release(self, hold: Hold) -> None:
        """Give HOLD's session back (a no-op when HOLD no longer holds it)."""
        if self._holds.get(hold.session) is hold:
            del self._holds[hold.session]

    @asynccontextmanager
    async def hold(self, session: str, purpose: Purpose) -> AsyncIterator[Hold]:
        """``async with gate.hold(session, "rewind"):`` — held for the block."""
        hold = self.acquire(session, purpose)
        try:
            yield hold
        finally:
            self.release(hold)


def writable_root(journal: Journal, root: Path) -> Path:
    """ROOT, after the checks every writer makes: JOURNAL takes writes, ROOT exists."""
    if not journal.writable:
        raise TandemError("read-only", journal.read_only_reason or "session is read-only")
    if not root.is_dir():
        raise TandemError("not-found", f"The session's directory {root} no longer exists; "
                          "resume it to re-root it first")
    return root
