"""A state event (``turn-ended``, a question) goes out at once; only deltas wait to merge.

The pusher distributes at most once an `INTERVAL` while deltas keep coming,
so a token stream merges into a few calls, and at once after a quiet spell,
so its first tokens are not held back; a wait once also delayed every
``turn-ended`` by up to 16 ms, a third of a turn's own overhead
(``bench/bench_turn.py``). Run over
a real socket with the real `Connection` and `Outbox`; the interval is
stretched to 5 s so "at once" cannot be confused with "after the wait".
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tandem.protocol.events import AnyEvent, TurnEndedEvent, delta
from tandem.server import pusher as pusher_module

from .pusher_peer import Batches, deliver


def test_turn_ended_is_not_held_back_by_the_delta_interval(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pusher_module, "INTERVAL", 5.0)
    deltas: list[AnyEvent] = [delta(1, "text", t) for t in ("a", "b", "c")]
    ended = TurnEndedEvent(turn=1, outcome="succeeded", error=None, files_changed=[])
    batches, elapsed = asyncio.run(deliver([*deltas, ended], "turn-ended"))
    assert elapsed < 2.5, f"turn-ended took {elapsed:.2f} s: it waited for the interval"
    events = [e for b in batches for e in b]
    # The deltas before it still merged, and went first.
    assert [e["kind"] for e in events] == ["delta", "turn-ended"]
    assert events[0]["text"] == "abc"


def test_turn_ended_during_the_wait_for_more_deltas_ends_the_wait(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The wait had begun when the turn ended: the turn's end must not trail
    # the reply that says it is over (tandem-wait-turn, then its events).
    # "a" goes at once (nothing was sent before); "b" waits to merge.
    monkeypatch.setattr(pusher_module, "INTERVAL", 5.0)
    ended = TurnEndedEvent(turn=1, outcome="succeeded", error=None, files_changed=[])
    batches, elapsed = asyncio.run(deliver(
        [delta(1, "text", "a")], "turn-ended",
        steps=[(0.05, [delta(1, "text", "b")]), (0.1, [ended])]))
    assert elapsed < 2.5, f"turn-ended took {elapsed:.2f} s: it waited for the interval"
    assert [[(e["kind"], e.get("text")) for e in b] for b in batches] == [
        [("delta", "a")], [("delta", "b"), ("turn-ended", None)]]


def test_a_stream_s_first_deltas_go_at_once_and_the_rest_wait_to_merge(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After a quiet spell deltas are not held back; within the interval they merge.

    The first tokens of an answer show without waiting; what streams after
    them goes at most once an interval, merged (a 200 KB answer in ~320 calls).
    """
    monkeypatch.setattr(pusher_module, "INTERVAL", 0.5)
    firsts: list[AnyEvent] = [delta(1, "text", t) for t in ("a", "b")]
    arrived: list[float] = []
    started = time.monotonic()

    def two_batches(batches: Batches) -> bool:
        while len(arrived) < len(batches):
            arrived.append(time.monotonic() - started)
        return len(batches) >= 2

    batches, _ = asyncio.run(deliver(
        firsts, two_batches,
        steps=[(0.1, [delta(1, "text", "c")]), (0.05, [delta(1, "text", "d")])]))
    assert [[e["text"] for e in b] for b in batches] == [["ab"], ["cd"]]
    assert arrived[0] < 0.3, f"the first deltas waited {arrived[0]:.2f} s"
    assert arrived[1] >= 0.45, f"the rest went after {arrived[1]:.2f} s, not merged"


def test_sessions_streaming_at_once_each_merge_their_own_deltas(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Four sessions' deltas interleave in the queue; merging only with the
    # queue's last event made one call per token (bench_stream_tty's x4 mode).
    monkeypatch.setattr(pusher_module, "INTERVAL", 0.5)
    stream: list[AnyEvent | tuple[str, AnyEvent]] = [
        (s, delta(1, "text", f"{s}{i}")) for i in range(3) for s in ("a", "b")]
    ended = TurnEndedEvent(turn=1, outcome="succeeded", error=None, files_changed=[])
    # An event of a session ends merging: b's next delta goes after it.
    stream += [("b", ended), ("a", delta(1, "text", "a3")), ("b", delta(1, "text", "b3")),
               ("a", delta(1, "reasoning", "r")), ("a", delta(1, "text", "a4"))]
    batches, _ = asyncio.run(deliver(stream, "turn-ended"))
    events = [(e["session"], e["kind"], e.get("text")) for b in batches for e in b]
    # One batch: everything was queued before the distributor ran.
    assert events == [("a", "delta", "a0a1a2"), ("b", "delta", "b0b1b2"),
                      ("b", "turn-ended", None), ("a", "delta", "a3"), ("b", "delta", "b3"),
                      ("a", "delta", "r"), ("a", "delta", "a4")]
