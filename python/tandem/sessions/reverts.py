"""What a session's ``revert`` entries say about the files tandem left.

A revert (one hunk or file of a past turn, from a review) changes files
outside any turn and records the checkpoint after it. Two readers need that:
Rewind, whose "changed externally" compares with the last state tandem left
(a revert is tandem's own change, not an outside one), and the next revert
of the same file, which is refused when the file differs from its last known
state. Plain functions over journal entries (the typed view, `JournalEntry`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tandem.sessions.projection import visible_turns
from tandem.store.entry_view import JournalEntry


def left_after(entries: Iterable[JournalEntry]) -> dict[int, str]:
    """Turn -> checkpoint tandem last left the files in after that turn, before the next.

    The newest revert's ``after``, or a files-only undo's ``checkpoint`` (the
    files put back as they were before the rewind, while the turns stay
    hidden): both are tandem's own changes, never someone else's. Each counts
    for the latest turn still visible then (after a rewind, the one before
    the rewound turns). Reverts and undos are refused while a turn runs, so
    each falls between two turns.
    """
    out: dict[int, str] = {}
    seen = list(entries)
    ended: list[int] = []
    for i, e in enumerate(seen):
        if e["type"] == "turn_end" and isinstance(e["turn"], int):
            ended.append(e["turn"])
            continue
        files_only = e["type"] == "rewind_undo" and e.get("files_only")
        if not ended or (e["type"] != "revert" and not files_only):
            continue
        _, hidden = visible_turns(seen[:i])  # rare entries: the prefix is read for each
        last = max((t for t in ended if t not in hidden), default=None)
        if last is None:
            continue
        if e["type"] == "revert" and isinstance(e["after"], str):
            out[last] = e["after"]
        elif e["type"] == "rewind_undo" and isinstance(e["checkpoint"], str):
            out[last] = e["checkpoint"]
    return out


def reference_states(entries: Iterable[JournalEntry], turn: int, end: str,
                     paths: list[str]) -> dict[str, str]:
    """Path -> checkpoint holding the state tandem last left it in, after TURN.

    TURN's end checkpoint END, or the ``after`` of the newest later revert
    that concerned the path.
    """
    out = dict.fromkeys(paths, end)
    ended = False
    for e in entries:
        if e["type"] == "turn_end" and e["turn"] == turn:
            ended = True
        elif e["type"] == "revert" and ended and isinstance(e["after"], str):
            for p in e["paths"] or []:
                if p in out:
                    out[p] = e["after"]
    return out


def changed_by_later_turn(entries: Iterable[JournalEntry], turn: int, hidden: set[int],
                          paths: list[str]) -> int | None:
    """The first visible turn after TURN whose patch touched one of PATHS, else None."""
    wanted = set(paths)
    for e in entries:
        if e["type"] != "turn_end":
            continue
        t = e["turn"]
        if not isinstance(t, int) or t <= turn or t in hidden:
            continue
        patch = e.get("patch")
        files = patch.get("files") if isinstance(patch, Mapping) else None
        for f in files or []:
            if isinstance(f, Mapping) and ({f.get("path"), f.get("old_path")} & wanted):
                return t
    return None
