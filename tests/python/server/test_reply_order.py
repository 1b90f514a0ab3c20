"""A reply that says a turn ended never overtakes the turn's events.

Events go out in batches, one call at a time, each waiting for the client's
return; a reply goes out as soon as it is ready. So a client slow to take a
batch got ``turns/wait``'s "succeeded" while the turn's last entries still
waited in its outbox, and read the journal's end before its events. The
end-to-end test drives a real ``tandem serve`` with a fake OpenAI model and
a client that takes each batch slowly; the others run the real pusher and
`Connection` in-process over a real socket, for the bound and the edges.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec

from tandem.protocol.base import MethodSpec, Params
from tandem.protocol.events import EntryEvent, TurnEndedEvent
from tandem.protocol.sexp import Symbol
from tandem.server import connection, framing
from tandem.server.connection import Connection
from tandem.server.outbox import Outbox
from tandem.server.pusher import EventPusher

from .epc_peer import Peer, start_backend

TOKEN = "order-token"
HOLD = 0.3
"""Seconds the slow client keeps each event batch before it returns it."""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Peer]:
    script = [Reply(tool_calls=[ToolCallSpec(id="r1", name="read_file",
                                             input={"path": "a.txt"})]),
              Reply(text="read it")]
    with FakeOpenAI(script) as fake:
        os.environ.update(OPENAI_BASE_URL=fake.base_url + "/v1", OPENAI_API_KEY="sk-o")
        try:
            proc = start_backend(tmp_path / "home", TOKEN)
        finally:
            for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
                os.environ.pop(k, None)
        peer = Peer(proc.port)  # type: ignore[attr-defined]
        try:
            yield peer
        finally:
            peer.close()
            proc.terminate()
            proc.wait(10)


def _call(peer: Peer, method: str, params: Any, seen: list[Any]) -> Any:
    """Call METHOD; take every event batch slowly (HOLD s each) meanwhile, into SEEN.

    SEEN gets each event, then ("reply", METHOD) when the reply arrives.
    """
    uid = peer.call(method, params)
    peer.sock.settimeout(60)
    while True:
        msg = peer.recv()
        if msg[0] == "call":
            seen.extend(msg[3][0])
            time.sleep(HOLD)  # a busy Emacs
            peer.send([Symbol("return"), msg[1], None])
        elif msg[1] == uid:
            assert msg[0] == "return", msg
            seen.append(("reply", method))
            return msg[2]


def test_turns_wait_replies_after_the_turns_entries_and_its_end(
        served: Peer, tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    seen: list[Any] = []
    assert _call(served, "hello", {"token": TOKEN}, seen)
    info = _call(served, "sessions/new", {"cwd": str(root)}, seen)
    sent = _call(served, "turns/send", {"session": info["id"], "text": "read a",
                                        "provider": "openai:m"}, seen)
    status = _call(served, "turns/wait", {"session": info["id"], "turn": sent["turn"],
                                          "timeout": 60}, seen)
    assert status["outcome"] == "succeeded"
    before = seen[:seen.index(("reply", "turns/wait"))]
    kinds = [e.get("kind") for e in before if isinstance(e, dict)]
    entries = [e["entry"]["type"] for e in before
               if isinstance(e, dict) and e.get("kind") == "entry"]
    print(f"before the reply: {len(before)} events, entries {entries}")
    assert "tool_result" in entries and "turn-ended" in kinds, (
        f"turns/wait's reply overtook the turn's events: {kinds}")


class _Empty(Params):
    pass


async def _serve_one(handler: Any, after_events: bool) -> tuple[
        EventPusher, asyncio.StreamReader, asyncio.StreamWriter, asyncio.Server]:
    pusher = EventPusher()
    methods = {"end": MethodSpec("end", _Empty, handler, "", after_events=after_events)}
    ready = asyncio.Event()

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        conn = Connection(r, w, methods, None, "t")
        conn.authed = True
        conn.events_delivered = pusher.attach(conn)
        ready.set()
        await conn.serve()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", server.sockets[0].getsockname()[1], limit=2**20)
    await ready.wait()
    return pusher, reader, writer, server


def _frames_until_reply(after_events: bool, answer_batches: bool) -> list[str]:
    """Publish an entry, call ``end`` (which publishes the turn's end), while the
    first batch is held; return what the client read, in order."""

    async def main() -> list[str]:
        pusher: EventPusher

        async def end(app: Any, p: _Empty) -> str:
            pusher.publish("s", TurnEndedEvent(turn=1, outcome="succeeded", error=None,
                                               files_changed=[]))
            return "ended"

        pusher, reader, writer, server = await _serve_one(end, after_events)
        pusher.publish("s", EntryEvent(entry={"type": "tool_call"}))
        first = await asyncio.wait_for(framing.read_frame(reader), 10)
        order = ["batch:" + ",".join(e["kind"] for e in first[3][0])]
        writer.write(framing.encode_frame([Symbol("call"), 1, Symbol("end"), [{}]]))
        await asyncio.sleep(0.2)  # the end is published and waits behind the first batch
        if answer_batches:
            writer.write(framing.encode_frame([Symbol("return"), first[1], None]))
        while not order[-1].startswith("reply"):
            msg = await asyncio.wait_for(framing.read_frame(reader), 10)
            if msg[0] == "call":
                order.append("batch:" + ",".join(e["kind"] for e in msg[3][0]))
                writer.write(framing.encode_frame([Symbol("return"), msg[1], None]))
            else:
                order.append(f"reply:{msg[2]}")
        writer.close()
        server.close()
        return order

    return asyncio.run(main())


def test_a_marked_reply_waits_for_the_batch_held_before_it() -> None:
    assert _frames_until_reply(True, True) == ["batch:entry", "batch:turn-ended",
                                               "reply:ended"]


def test_an_unmarked_reply_does_not_wait() -> None:
    """What every other method does (the check above is not vacuous)."""
    assert _frames_until_reply(False, True) == ["batch:entry", "reply:ended"]


def test_a_client_that_never_takes_its_events_still_gets_the_reply(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounded: Emacs calling from inside an event handler holds its own batch."""
    monkeypatch.setattr(connection, "AFTER_EVENTS_WAIT", 0.5)
    t0 = time.monotonic()
    assert _frames_until_reply(True, False) == ["batch:entry", "reply:ended"]
    assert 0.5 <= time.monotonic() - t0 < 5


class _Failing:
    """A peer whose first push fails (a timed-out push does the same)."""

    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.pushes: list[bytes] = []

    async def call_encoded(self, method: str, args: bytes, timeout: float) -> None:
        self.pushes.append(args)
        await asyncio.sleep(0)
        if len(self.pushes) == 1:
            raise TimeoutError


def test_sent_counts_failed_and_lost_events_as_settled() -> None:
    """A failed push and an undeliverable event settle too: nothing waits forever."""

    async def main() -> list[bytes]:
        peer = _Failing()
        outbox = Outbox(peer)
        outbox.put("s", b'(:kind "entry")')
        await asyncio.wait_for(outbox.sent(), 5)  # settled by the failed push
        outbox.put("s", None)  # undeliverable: a gap
        await asyncio.wait_for(outbox.sent(), 5)  # settled by the resync
        await asyncio.wait_for(outbox.sent(), 5)  # nothing new: at once
        peer.closed.set()
        outbox.task.cancel()
        return peer.pushes

    pushes = asyncio.run(main())
    assert b"entry" in pushes[0] and all(b"resync" in p for p in pushes[1:]), pushes
