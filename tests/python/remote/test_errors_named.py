"""Errors of an agent-server name the host and carry the server's own words.

Against the stand-in server on a real socket, and a closed port: unreachable,
401, 429 at capacity, a conversation that is gone (404 on its path).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tandem.adapters.remote import attach, conversation_new
from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.protocol.remote import AttachParams, ConversationParams, LlmSettings
from tandem.remote.client import AgentServerClient
from tandem.remote.errors import RemoteError

from .fake_server import FakeAgentServer

pytestmark = pytest.mark.anyio


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _error(coro: object) -> TandemError:
    with pytest.raises(TandemError) as err:
        await coro  # type: ignore[misc]
    return err.value


async def test_unreachable_and_401_name_the_host(
        tmp_path: Path, keyed: FakeAgentServer) -> None:
    app = App(home=tmp_path / "home")
    url = f"http://127.0.0.1:{_closed_port()}"
    err = await _error(attach(app, AttachParams(session="s1", host="far-box", url=url)))
    assert err.code == "remote-unreachable"
    assert err.message.startswith("agent-server far-box: ") and url in err.message
    err = await _error(attach(app, AttachParams(session="s1", host="box", url=keyed.url,
                                                api_key="k-7f3e-wrong")))
    assert err.code == "unauthorized"
    assert err.message.startswith("agent-server box: ")
    assert "Unauthorized" in err.message and "HTTP 401" in err.message
    assert keyed.url in err.message and "k-7f3e" not in err.message
    assert app.remote.target("s1") is None  # nothing recorded


async def test_429_says_the_server_is_at_capacity(tmp_path: Path, fake: FakeAgentServer) -> None:
    app = App(home=tmp_path / "home")
    fake.at_capacity = True
    err = await _error(conversation_new(app, ConversationParams(
        url=fake.url, working_dir="w", llm=LlmSettings(model="openai/x"))))
    assert err.code == "remote-busy"
    assert "Conversation run limit reached. Retry the request later." in err.message
    assert "HTTP 429" in err.message and fake.url in err.message
    assert "at capacity" in err.message
    fake.at_capacity = False
    ok = await conversation_new(app, ConversationParams(
        url=fake.url, working_dir="w", llm=LlmSettings(model="openai/x")))
    assert ok.working_dir == f"{fake.home}/w"


async def test_a_conversation_gone_is_named_gone(fake: FakeAgentServer) -> None:
    async with AgentServerClient(fake.url) as c:
        err = await _error(c._request("Reading the events failed", "GET",
                                      "/api/conversations/0123abcd/events/search"))
    assert isinstance(err, RemoteError)
    assert err.code == "remote-gone" and err.status == 404
    assert "conversation 0123abcd is gone from" in err.message and fake.url in err.message
    assert "Not Found" in err.message
    # A 404 elsewhere stays a plain not-found.
    async with AgentServerClient(fake.url) as c:
        other = await _error(c._request("x", "GET", "/api/file/nothing"))
    assert other.code == "not-found"
