"""Event delivery: bounded batches, one queue per connection, lost batches made visible.

Against the real ``tandem serve`` with Python EPC peers on real sockets,
except the single oversized event, which no method can publish: that one
runs the real pusher and `Connection` in-process, over a real socket.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from typing import Any

from tandem.protocol.events import EntryEvent, TurnEndedEvent
from tandem.protocol.sexp import Symbol

from .conftest import TOKEN
from .epc_peer import Peer
from .pusher_peer import deliver


def _authed(backend: subprocess.Popen[str]) -> Peer:
    p = Peer(backend.port)  # type: ignore[attr-defined]
    p.call("hello", {"token": TOKEN})
    assert p.recv()[0] == "return"
    return p


def _collect(
    peer: Peer, until: Any, answer: Any = None, limit: float = 60, replies: list[Any] | None = None
) -> list[list[Any]]:
    """Answer every ``tandem--events`` call with ANSWER(n) until UNTIL(batches).

    Replies to our own calls go to REPLIES.
    """
    batches: list[list[Any]] = []
    deadline = time.monotonic() + limit
    while not until(batches):
        assert time.monotonic() < deadline, f"only {len(batches)} batches"
        msg = peer.recv()
        if msg[0] == "call" and msg[2] == "tandem--events":
            batches.append(msg[3][0])
            reply = answer(len(batches)) if answer else [Symbol("return"), msg[1], None]
            reply[1] = msg[1]
            peer.send(reply)
        elif replies is not None:
            replies.append(msg)
    return batches


def _kinds(batches: list[list[Any]]) -> list[str]:
    return [e["kind"] for b in batches for e in b]


def test_20_mib_of_deltas_arrive_in_pieces_with_turn_ended(backend: subprocess.Popen[str]) -> None:
    peer = _authed(backend)
    peer.call("debug/emit", {"session": "s", "count": 20 * 1024, "text": "x" * 1024})
    replies: list[Any] = []
    batches = _collect(peer, lambda bs: bool(replies), replies=replies)  # all published
    peer.call("debug/emit", {"session": "s", "count": 1, "kind": "turn-ended"})
    batches += _collect(peer, lambda bs: "turn-ended" in _kinds(bs))
    events = [e for b in batches for e in b]
    assert sum(len(e["text"]) for e in events if e["kind"] == "delta") == 20 * 1024 * 1024
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len(batches) > 4  # never one 20 MiB frame (today: dropped whole)


def test_a_silent_client_holds_up_no_one(backend: subprocess.Popen[str]) -> None:
    silent = _authed(backend)  # authenticated, then never answers a call
    real = _authed(backend)
    for n in range(3):
        start = time.monotonic()
        real.call("debug/emit", {"session": "s", "count": 1, "kind": "turn-ended"})
        _collect(real, lambda bs: "turn-ended" in _kinds(bs), limit=20)
        assert time.monotonic() - start < 10, f"event {n} waited for the silent client"
    silent.close()


def test_a_failed_batch_becomes_a_visible_gap_and_a_resync(backend: subprocess.Popen[str]) -> None:
    peer = _authed(backend)
    peer.call("debug/emit", {"session": "s", "count": 1, "kind": "turn-ended"})

    def fail_first(n: int) -> list[Any]:
        if n == 1:
            return [Symbol("return-error"), 0, "Emacs could not apply it"]
        return [Symbol("return"), 0, None]

    batches = _collect(peer, lambda bs: len(bs) >= 2, answer=fail_first)
    lost, after = batches[0], batches[1]
    assert [e["kind"] for e in lost] == ["turn-ended"]
    # The next batch says so, with a seq past the lost one: the client's gap hook runs
    # and the view refetches the journal, so turn-ended is not lost for good.
    assert after[0]["kind"] == "resync" and after[0]["session"] == "s"
    assert after[0]["seq"] == lost[-1]["seq"] + 1


async def _one_huge_event(size: int) -> list[list[Any]]:
    ended = TurnEndedEvent(turn=1, outcome="succeeded", error=None, files_changed=[])
    batches, _ = await deliver(
        [EntryEvent(entry={"type": "tool_result", "output": "y" * size}), ended], "turn-ended")
    return list(batches)


def test_an_event_over_the_batch_cap_is_delivered_alone() -> None:
    batches = asyncio.run(_one_huge_event(6 * 1024 * 1024))
    assert [[e["kind"] for e in b] for b in batches] == [["entry"], ["turn-ended"]]
    assert len(batches[0][0]["entry"]["output"]) == 6 * 1024 * 1024


def test_an_event_too_large_to_frame_becomes_a_gap_not_a_loss_of_what_follows() -> None:
    batches = asyncio.run(_one_huge_event(20 * 1024 * 1024))
    events = [e for b in batches for e in b]
    assert [e["kind"] for e in events] == ["resync", "turn-ended"]
    assert events[0]["seq"] == 2  # seq 1 (the entry) is the gap the client sees
    assert events[1]["seq"] == 3
