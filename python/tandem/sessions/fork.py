"""Fork a session: a new session whose conversation is another's up to a turn.

The new journal's header records ``forked_from`` (``{"session": ID,
"turn": N}``); its entries are copies of the source's chat turns up to and
including turn N that no rewind hid, with their turn numbers (the fork's
next turn is N + 1 or later), plus the compactions that precede every later
turn. What the next chat request of the fork carries is then the source's
projection up to turn N, by the one projection (`tandem.sessions.projection`).

The files are not touched, and the copies name no checkpoint and no patch:
the source's checkpoints are the source's, so a copied turn cannot be
rewound or reviewed in the fork (``no-checkpoint``); the fork's own turns
can. Directive turns, permission questions, ACP conversation ids, remote
turns and provider choices are not copied: a fork is a chat conversation.

Refusals: ``not-found`` (no such session; no visible turn N, naming the
turns there are), ``busy`` (turn N has not ended), ``invalid`` (N is a
directive turn), ``read-only`` is never raised: the source is only read.
"""

from __future__ import annotations

from collections.abc import Sequence

from tandem.protocol.base import TandemError
from tandem.sessions.manager import Active
from tandem.sessions.projection import directive_turns, visible_turns
from tandem.sessions.service import SessionService
from tandem.store.entry_view import JournalEntry

COPIED = frozenset({"turn_start", "user", "assistant", "reasoning", "tool_call", "tool_result",
                    "turn_end"})
"""The entry types a fork copies of each kept turn."""

_DROPPED_KEYS = {"turn_start": ("checkpoint",), "turn_end": ("patch", "completeness")}
"""Keys a copy leaves out: they name the source's checkpoints."""


def _ranges(turns: Sequence[int]) -> str:
    """TURNS (sorted) said briefly: ``1–3, 5``."""
    parts: list[str] = []
    start = prev = None
    for t in turns:
        if prev is not None and t == prev + 1:
            prev = t
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}–{prev}")
        start = prev = t
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}–{prev}")
    return ", ".join(parts)


def fork_entries(entries: Sequence[JournalEntry], turn: int, session: str = "") -> list[
        dict[str, object]]:
    """The entries a fork of ENTRIES (SESSION's) up to TURN starts with (without seq and ts).

    Raises `TandemError` when TURN cannot be forked from (see the module doc).
    """
    seen, hidden = visible_turns(entries)
    visible = sorted(seen - hidden)
    if turn not in visible:
        there = f"its turns are {_ranges(visible)}" if visible else "it has no turn yet"
        raise TandemError("not-found", f"Session {session} has no turn {turn} to fork from "
                          f"({there})")
    if turn in directive_turns(entries):
        raise TandemError("invalid", f"Turn {turn} is a directive turn; fork from a chat turn "
                          "(a fork is a chat conversation)")
    ended = {e.get("turn") for e in entries if e.get("type") == "turn_end"}
    if turn not in ended:
        raise TandemError("busy", f"Turn {turn} of session {session} has not ended; fork when "
                          "it has")
    kept = {t for t in visible if t <= turn} - directive_turns(entries) - (seen - ended)
    out: list[dict[str, object]] = []
    later = False  # a turn after TURN started: a compaction from here on may summarise it
    for e in entries:
        kind = e.get("type")
        t = e.get("turn")
        if kind == "turn_start" and isinstance(t, int) and t > turn:
            later = True
        if kind == "compaction" and not later:
            out.append({k: v for k, v in e.items() if k not in ("seq", "ts")})
        elif kind in COPIED and isinstance(t, int) and t in kept:
            drop = _DROPPED_KEYS.get(str(kind), ())
            out.append({k: v for k, v in e.items() if k not in ("seq", "ts", *drop)})
    return out


def fork(sessions: SessionService, session: str, turn: int) -> Active:
    """Start a new session, made active, whose conversation is SESSION's up to TURN."""
    source = sessions.journal(session)
    copied = fork_entries(sessions.entries(source), turn, source.id)
    title = source.header.title or "untitled"
    active = sessions.manager.new(str(sessions.root_of(source)),
                                  f"Fork of {title} at turn {turn}"[:200])
    journal = active.journal
    journal.update_header(forked_from={"session": source.id, "turn": turn})
    for entry in copied:
        journal.append(entry)
    journal.sync()
    return active
