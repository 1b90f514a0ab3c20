"""Revert a hunk or a file of one turn of a session, journaled and checkpointed.

The journal side of `tandem.checkpoints.reverting`: which checkpoints the
turn recorded, the state tandem last left each path in (its end, or a later
revert), the refusals (a turn or a rewind in flight, a rewound turn, a path
a later turn changed), then one ``revert`` entry published as an ``entry``
event. The files move first (the checkpointer's restore transaction); if
the entry cannot be written, the files go back to the ``before`` checkpoint,
so files and journal never disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tandem.checkpoints.reverting import RevertResult, concerned_paths
from tandem.checkpoints.reverting import revert as revert_files
from tandem.protocol.base import TandemError
from tandem.remote.rewind import put_back as put_back_remote
from tandem.remote.rewind import record_push
from tandem.sessions.projection import visible_turns
from tandem.sessions.reverts import changed_by_later_turn, reference_states
from tandem.store.journal import Journal
from tandem.store.models import entry_to_dict
from tandem.turns.engine import run_blocking

if TYPE_CHECKING:
    from tandem.app import App


def turn_checkpoints(entries: list[dict[str, Any]], turn: int) -> tuple[str, str]:
    """(pre-turn, end) checkpoint ids TURN recorded, or ``not-found`` / ``no-checkpoint``."""
    start = next((e for e in entries if e.get("type") == "turn_start"
                  and e.get("turn") == turn), None)
    end = next((e for e in entries if e.get("type") == "turn_end"
                and e.get("turn") == turn), None)
    if start is None:
        raise TandemError("not-found", f"The session has no turn {turn}")
    if end is None:
        raise TandemError("busy", f"Turn {turn} has not ended; review it when it has")
    patch = end.get("patch")
    ids = (patch.get("from_id"), patch.get("to_id")) if isinstance(patch, dict) else (None, None)
    if not all(isinstance(i, str) and i for i in ids):
        raise TandemError("no-checkpoint", f"Turn {turn} recorded no patch, so nothing of "
                          "it can be reverted")
    return str(ids[0]), str(ids[1])


async def revert(app: App, session: str, turn: int, path: str, hunk: int | None,
                 hunk_header: str | None) -> dict[str, Any]:
    """Revert HUNK (None: the whole file) of PATH in TURN of SESSION; return the entry."""
    journal = app.sessions.journal(session)
    async with app.gate.hold(journal.id, "revert"):
        return await _revert(app, journal, turn, path, hunk, hunk_header)


async def _revert(app: App, journal: Journal, turn: int, path: str,
                  hunk: int | None, hunk_header: str | None) -> dict[str, Any]:
    entries = app.sessions.entries(journal)
    _, hidden = visible_turns(entries)
    if turn in hidden:
        raise TandemError("not-found", f"Turn {turn} was rewound; its patch is history")
    base, end = turn_checkpoints(entries, turn)
    remote = app.remote_checkpoints if app.rewinds.is_remote(journal) else None
    if remote is not None:  # revert on the mirror, as the server has it now, then push
        await remote.sync(journal.id)
    root = app.rewinds.root(journal)
    cp = app.checkpoints.for_root(root)
    change = await run_blocking(concerned_paths, cp, base, end, path)
    later = changed_by_later_turn(entries, turn, hidden, change)
    if later is not None:
        raise TandemError("stale", f"{path} changed since turn {turn} (turn {later} changed "
                          "it); nothing was reverted", {"path": path, "turn": later})
    reference = reference_states(entries, turn, end, change)
    label = f"{'hunk ' + str(hunk + 1) + ' of ' if hunk is not None else ''}{path}, turn {turn}"
    if remote is not None:  # recorded before any file moves (pushing unchanged files is harmless)
        await run_blocking(record_push, remote, journal.id, change)
    done: RevertResult = await run_blocking(
        lambda: revert_files(cp, base=base, end=end, path=path, hunk=hunk,
                             hunk_header=hunk_header, reference=reference, label=label))
    try:
        entry = journal.append({"type": "revert", "of_turn": turn, "path": path, "hunk": hunk,
                                "paths": done.paths, "before": done.before, "after": done.after,
                                "restored": done.restored, "deleted": done.deleted})
        journal.sync()
    except BaseException:
        # Not journaled: put the files back so the journal and the files agree.
        await run_blocking(lambda: cp.restore(done.before))
        raise
    data = entry_to_dict(entry)
    app.events.publish(journal.id, "entry", {"entry": data})
    if remote is not None:
        pushed = await put_back_remote(remote, journal.id, [], [])
        if pushed is not None:  # in the reply only: what reached the server
            data = {**data, "remote": pushed.model_dump()}
    return data

