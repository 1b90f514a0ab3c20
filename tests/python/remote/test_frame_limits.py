"""What an agent-server sends is bounded while it is received, and refused by name.

A session socket (a real websockets server on 127.0.0.1) that sends a 12 MiB
frame after its ``sync`` ends the stream at once with a sentence naming the
limit, not after a round of reconnects that fetch the same frame again. A
REST reply over the reply limit fails the same way; a file saved with
``download_to`` streams to disk instead.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.server import ServerConnection, serve

from tandem.remote.client import MAX_REPLY, AgentServerClient
from tandem.remote.errors import RemoteError
from tandem.remote.stream import SessionStream

from .fake_server import FakeAgentServer

pytestmark = pytest.mark.anyio


async def test_a_frame_over_the_limit_is_a_named_error(tmp_path: Path) -> None:
    connections = 0

    async def handler(ws: ServerConnection) -> None:
        nonlocal connections
        connections += 1
        await ws.send(json.dumps({"type": "sync", "through_seq": 0}))
        await ws.send(json.dumps({"type": "durable", "seq": 1,
                                  "event": {"text": "x" * (12 << 20)}}))
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        stream = SessionStream(f"http://127.0.0.1:{port}", "conv1", {}, backoff=0.01)
        started = time.monotonic()
        with anyio.fail_after(30), pytest.raises(RemoteError) as err:
            async for _ in stream.frames():
                pass
        await stream.close()
        server.close()
    assert err.value.code == "remote-invalid"
    assert "conversation conv1" in str(err.value)
    assert "over the 8 MiB limit on one agent-server frame" in str(err.value)
    assert connections == 1 and time.monotonic() - started < 5


async def test_a_reply_over_the_limit_is_refused_and_a_file_streams(
        fake: FakeAgentServer, server_home: Path, tmp_path: Path) -> None:
    big = server_home / "big.bin"
    with open(big, "wb") as f:
        f.truncate(MAX_REPLY + (8 << 20))
    async with AgentServerClient(fake.url) as client:
        with anyio.fail_after(60), pytest.raises(RemoteError) as err:
            await client.download(str(big))
        assert "over the 32 MiB limit on one agent-server reply" in str(err.value)
        size = await client.download_to(str(big), tmp_path / "got.bin")
    assert size == big.stat().st_size == (tmp_path / "got.bin").stat().st_size
