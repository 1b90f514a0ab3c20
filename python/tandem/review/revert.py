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

from tandem import faults
from tandem.checkpoints.reverting import RevertResult, concerned_paths
from tandem.checkpoints.reverting import revert as revert_files
from tandem.checkpoints.service import CheckpointService
from tandem.events import EventSink
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import PatchSummary
from tandem.protocol.events import EntryEvent
from tandem.protocol.sessions import WrittenEntry
from tandem.remote.checkpoints import RemoteCheckpoints
from tandem.rewind.remote import put_back as put_back_remote
from tandem.rewind.remote import record_push
from tandem.rewind.service import RewindService
from tandem.sessions.gate import SessionGate
from tandem.sessions.projection import visible_turns
from tandem.sessions.reverts import changed_by_later_turn, reference_states
from tandem.sessions.service import SessionService
from tandem.store.journal import Journal
from tandem.store.models import entry_to_dict
from tandem.store.turn_index import TurnIndex
from tandem.turns.engine import run_blocking


def turn_checkpoints(index: TurnIndex, turn: int) -> tuple[str, str]:
    """(pre-turn, end) checkpoint ids TURN recorded, or ``not-found`` / ``no-checkpoint``."""
    rec = index.get(turn)
    if rec is None or rec.start is None:
        raise TandemError("not-found", f"The session has no turn {turn}")
    end = rec.end
    if end is None:
        raise TandemError("busy", f"Turn {turn} has not ended; review it when it has")
    patch = PatchSummary.read(end.patch)
    if patch is None or not patch.from_id or not patch.to_id:
        raise TandemError("no-checkpoint", f"Turn {turn} recorded no patch, so nothing of "
                          "it can be reverted")
    return patch.from_id, patch.to_id


class Reverter:
    """Reverts of one hunk or file of a turn, with the collaborators they need."""

    def __init__(self, events: EventSink, sessions: SessionService, gate: SessionGate,
                 checkpoints: CheckpointService, rewinds: RewindService,
                 remote: RemoteCheckpoints) -> None:
        self.events = events
        self.sessions = sessions
        self.gate = gate
        self.checkpoints = checkpoints
        self.rewinds = rewinds
        """Where a session's files are (the project, or a remote session's mirror)."""
        self.remote = remote

    async def revert(self, session: str, turn: int, path: str, hunk: int | None,
                     hunk_header: str | None) -> WrittenEntry:
        """Revert HUNK (None: the whole file) of PATH in TURN of SESSION; return the entry."""
        journal = self.sessions.journal(session)
        async with self.gate.hold(journal.id, "revert"):
            return await self._revert(journal, turn, path, hunk, hunk_header)

    async def _revert(self, journal: Journal, turn: int, path: str,
                      hunk: int | None, hunk_header: str | None) -> WrittenEntry:
        entries = self.sessions.entries(journal)
        _, hidden = visible_turns(entries)
        if turn in hidden:
            raise TandemError("not-found", f"Turn {turn} was rewound; its patch is history")
        base, end = turn_checkpoints(self.sessions.index(journal), turn)
        remote = self.remote if self.rewinds.is_remote(journal) else None
        if remote is not None:  # revert on the mirror, as the server has it now, then push
            await remote.sync(journal.id)
        root = self.rewinds.root(journal)
        cp = self.checkpoints.for_root(root)
        change = await run_blocking(concerned_paths, cp, base, end, path)
        later = changed_by_later_turn(entries, turn, hidden, change)
        if later is not None:
            raise TandemError("stale", f"{path} changed since turn {turn} (turn {later} changed "
                              "it); nothing was reverted", {"path": path, "turn": later})
        reference = reference_states(entries, turn, end, change)
        label = f"{'hunk ' + str(hunk + 1) + ' of ' if hunk is not None else ''}{path}, turn {turn}"
        if remote is not None:  # recorded before any file moves (pushing unchanged is harmless)
            await run_blocking(record_push, remote, journal.id, change)
        done: RevertResult = await run_blocking(
            lambda: revert_files(cp, base=base, end=end, path=path, hunk=hunk,
                                 hunk_header=hunk_header, reference=reference, label=label))
        try:
            faults.point("revert.restored")
            entry = journal.append({"type": "revert", "of_turn": turn, "path": path, "hunk": hunk,
                                    "paths": done.paths, "before": done.before, "after": done.after,
                                    "restored": done.restored, "deleted": done.deleted})
            journal.sync()
        except BaseException:
            # Not journaled: put the files back so the journal and the files agree.
            await run_blocking(lambda: cp.restore(done.before))
            raise
        data = entry_to_dict(entry)
        self.events.publish(journal.id, EntryEvent(entry=data))
        if remote is not None:
            pushed = await put_back_remote(remote, journal.id, [], [])
            if pushed is not None:  # in the reply only: what reached the server
                data = {**data, "remote": pushed.model_dump()}
        return WrittenEntry(data)
