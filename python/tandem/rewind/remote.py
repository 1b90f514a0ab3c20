"""The server side of a Rewind of a remote session: files, then the conversation.

`RewindService` restores the session's mirror (the root its checkpoints
are of) in its usual transaction; before any file moves it records the
paths to push (`record_push`). Once the rewind entry is durable, `put_back`
pushes them (`tandem.remote.push`) and moves the root chat's conversation
back to the event before the first rewound turn (``POST
/api/conversations/{id}/navigate``, same conversation id; the journal's
``remote_turn`` entry of that turn names the conversation and the event).
Nothing here fails the rewind: what did not reach the server is named in
the result, and files are pushed again before the next turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tandem.protocol.base import TandemError
from tandem.protocol.sessions import DiscardedTurn, RemotePutBack
from tandem.remote.checkpoints import RemoteCheckpoints
from tandem.remote.push import PushState, load_pending, push_pending, save_pending
from tandem.store.entry_view import JournalEntry


def record_push(remote: RemoteCheckpoints, session: str, paths: Sequence[str]) -> None:
    """Record PATHS of SESSION's working dir as to be made equal to the mirror (blocking)."""
    target = remote.remote.target(session)
    if target is None:
        return
    mirror = remote.mirror(session)
    pending = load_pending(mirror)
    known = set(pending.paths) if pending is not None else set()
    save_pending(mirror, PushState(working_dir=target.resolved_working_dir,
                                   paths=sorted(known | set(paths))))


def forget_push(remote: RemoteCheckpoints, session: str) -> None:
    """Drop SESSION's recorded push (the restore rolled back: the server already matches)."""
    save_pending(remote.mirror(session), PushState(working_dir="", paths=[]))


def conversation_point(entries: Sequence[JournalEntry], turns: Sequence[DiscardedTurn]
                       ) -> tuple[str, str | None] | None:
    """(conversation id, event id) to move the root chat back to, or None.

    The first rewound root-chat turn's ``remote_turn`` entry says where it
    started; directive turns ran in conversations of their own, never resumed.
    """
    chat = sorted(t.turn for t in turns if t.directive is None)
    if not chat:
        return None
    for e in entries:
        if e["type"] == "remote_turn" and e["turn"] == chat[0]:
            event = e.get("after_event_id")
            return e["conversation_id"], event if isinstance(event, str) else None
    return None


async def put_back(remote: RemoteCheckpoints, session: str,
                   entries: Sequence[JournalEntry], turns: Sequence[DiscardedTurn]
                   ) -> RemotePutBack | None:
    """Push the rewound files to SESSION's server and rewind its conversation."""
    found = remote.remote.session_client(session)
    if found is None:
        return None
    target, client = found
    out: dict[str, Any] = {"host": target.host}
    point = conversation_point(entries, turns)
    async with remote.lock(session), client:
        try:
            pushed = await push_pending(remote.mirror(session), client)
        except TandemError as e:
            pending = load_pending(remote.mirror(session))
            out.update(failed=pending.paths if pending else [], errors=[e.message])
        else:
            if pushed is not None:
                out.update(uploaded=pushed.uploaded, deleted=pushed.deleted,
                           failed=pushed.failed, errors=pushed.errors)
        if point is None:
            if any(t.directive is None for t in turns):
                out["conversation_error"] = ("the journal does not say where the conversation "
                                             "stood before the turn; it was not moved back")
        else:
            out["conversation_id"], out["event_id"] = point
            try:
                await client.navigate(*point)
            except TandemError as e:
                out["conversation_error"] = e.message
    return RemotePutBack(**out)
