"""What a remote turn opens while its before-sync runs, and the after-sync it skips.

Against the real openhands-agent-server, its agent talking to tandem's fake
LLM. The engine opens the turn's socket (its first frame is the
conversation's state: no ``GET``) while the pre-turn checkpoint syncs the
mirror, and a turn in which no action ran syncs once, before. What the
server holds is read back from the server's own disk, and a change made
there between turns, or while a turn that ran nothing ran, must still reach
the mirror (at the next turn's before-sync) and no turn's patch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.remote import engine as remote_engine
from tandem.remote.checkpoints import RemoteCheckpoints
from tandem.remote.client import AgentServerClient

from .agent_server import RunningServer, serve_for_tests
from .engine_helpers import (
    agent_script,
    answering,
    attached_session,
    chat,
    configure,
    conversation_state,
    conversations_on,
    directive,
    entries,
    run_command,
    server_events,
    sid_conversation,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    yield from serve_for_tests("tandem-remote-prepare", "remote prepare")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The syncs of every mirror and the requests of every client, as they happen."""
    seen: dict[str, list[str]] = {"syncs": [], "requests": []}
    real_sync, real_init = RemoteCheckpoints.sync, AgentServerClient.__init__

    async def sync(self: RemoteCheckpoints, session: str) -> Any:
        seen["syncs"].append(session)
        return await real_sync(self, session)

    def init(self: AgentServerClient, *args: Any, **kw: Any) -> None:
        real_init(self, *args, **kw)

        async def hook(request: httpx.Request) -> None:
            seen["requests"].append(f"{request.method} {request.url.path}")

        self._http.event_hooks["request"].append(hook)

    monkeypatch.setattr(RemoteCheckpoints, "sync", sync)
    monkeypatch.setattr(AgentServerClient, "__init__", init)
    return seen


def mirror_files(app: App, sid: str) -> dict[str, str]:
    root = app.remote_checkpoints.mirror(sid).root
    return {p.relative_to(root).as_posix(): p.read_text()
            for p in sorted(root.rglob("*")) if p.is_file()}


def server_files(wd: str) -> dict[str, str]:
    root = Path(wd)
    return {p.relative_to(root).as_posix(): p.read_text()
            for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


async def test_a_change_on_the_server_between_turns_reaches_the_mirror_not_the_patch(
        server: RunningServer, app: App, project: Path,
        counted: dict[str, list[str]]) -> None:
    script = agent_script(Reply(text="just words"), run_command("touch refused.txt"),
                          Reply(text="refused, went on"),
                          run_command("echo mine > mine.txt"), Reply(text="wrote it"))
    with FakeOpenAI(script) as fake:
        configure(app, server, fake)
        sid, wd = await attached_session(app, project, server)
        (Path(wd) / "seed.txt").write_text("seed\n")
        one = await chat(app, sid, "say something")
        assert one.outcome == "succeeded", one.error
        assert counted["syncs"] == [sid]  # no action ran: the before-sync alone
        assert one.files_changed == [] and mirror_files(app, sid) == {"seed.txt": "seed\n"}

        # Someone else, on the server, between turns.
        (Path(wd) / "theirs.txt").write_text("theirs\n")
        (Path(wd) / "seed.txt").write_text("seed, changed\n")
        asked: list[Any] = []
        two = await chat(app, sid, "try a command", answering("reject", asked))
        assert two.outcome == "succeeded", two.error
        assert len(asked) == 1 and not (Path(wd) / "refused.txt").exists()
        assert len(counted["syncs"]) == 2  # refused, so nothing ran: one sync again
        assert two.files_changed == []  # the outside change is nobody's turn
        assert mirror_files(app, sid) == server_files(wd)  # ... but it is in the mirror

        (Path(wd) / "later.txt").write_text("later\n")
        three = await chat(app, sid, "write a file", answering("allow_once", asked))
        assert three.outcome == "succeeded", three.error
        assert len(counted["syncs"]) == 4  # a command ran: before and after
        assert three.files_changed == ["mine.txt"]
        assert mirror_files(app, sid) == server_files(wd)
        assert set(server_files(wd)) == {"seed.txt", "theirs.txt", "later.txt", "mine.txt"}
        # The conversation's state came with the socket: no GET of it in any turn.
        assert not [r for r in counted["requests"] if r.startswith("GET /api/conversations/")]
    await app.turns.aclose()


async def test_the_turns_baseline_is_the_state_before_its_message(
        server: RunningServer, app: App, project: Path) -> None:
    """The usage and the Rewind point read from the socket's first frame, as GET gave them."""
    with FakeOpenAI(agent_script(Reply(text="first"), Reply(text="second"))) as fake:
        configure(app, server, fake)
        sid, _wd = await attached_session(app, project, server)
        assert (await chat(app, sid, "one")).outcome == "succeeded"
        cid = sid_conversation(entries(app, sid))
        leaf = conversation_state(server, cid)["leaf_event_id"]
        before = len(server_events(server, cid))
        two = await chat(app, sid, "two")
        assert two.outcome == "succeeded", two.error
        log = entries(app, sid)
        starts = [e for e in log if e["type"] == "remote_turn"]
        assert starts[-1]["conversation_id"] == cid and starts[-1]["after_event_id"] == leaf
        assert len(server_events(server, cid)) > before
        ends = [e for e in log if e["type"] == "turn_end"]
        # Each turn's own tokens, not the conversation's running total.
        assert 0 < ends[1]["usage"]["output_tokens"] <= ends[0]["usage"]["output_tokens"] * 2
        assert ends[1]["usage"]["input_tokens"] < sum(
            e["usage"]["input_tokens"] for e in ends)
    await app.turns.aclose()


@pytest.mark.parametrize("how", ["deleted", "another engine's id"])
async def test_a_conversation_the_server_lost_is_replaced(
        server: RunningServer, app: App, project: Path, how: str) -> None:
    with FakeOpenAI(agent_script(Reply(text="first"), Reply(text="second"))) as fake:
        configure(app, server, fake)
        sid, _wd = await attached_session(app, project, server)
        assert (await chat(app, sid, "remember ALPHA")).outcome == "succeeded"
        cid = sid_conversation(entries(app, sid))
        provider = next(p for p in app.turns._providers.values()
                        if isinstance(p, remote_engine.RemoteProvider))
        if how == "deleted":
            r = httpx.delete(f"{server.url}/api/conversations/{cid}",
                             headers={"X-Session-API-Key": server.api_key or ""})
            assert r.status_code < 300, r.text
        else:
            provider.reset_conversation("acp-session-of-another-engine")
        two = await chat(app, sid, "and now?")
        assert two.outcome == "succeeded", two.error
        assert two.answer == "second"
        new_cid = sid_conversation(entries(app, sid))
        assert new_cid != cid
        # A new conversation, seeded with the chat so far.
        said = str(fake.requests[-1].body)
        assert "remember ALPHA" in said and "and now?" in said
    await app.turns.aclose()


@pytest.mark.parametrize("when", ["before the socket opened", "after it opened"])
async def test_a_refused_checkpoint_closes_what_the_turn_opened(
        server: RunningServer, app: App, project: Path,
        monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    opened: list[Any] = []
    real_open = remote_engine.RemoteProvider._open

    async def spy(self: remote_engine.RemoteProvider, isolated: bool,
                  may_start: bool = True) -> Any:
        got = await real_open(self, isolated, may_start)
        if got is not None:
            opened.append(got)
        return got

    monkeypatch.setattr(remote_engine.RemoteProvider, "_open", spy)
    with FakeOpenAI(agent_script(Reply(text="first"), Reply(text="third"))) as fake:
        configure(app, server, fake)
        sid, _wd = await attached_session(app, project, server)
        assert (await chat(app, sid, "one")).outcome == "succeeded"
        cid = sid_conversation(entries(app, sid))
        events = len(server_events(server, cid))
        asked = len(fake.requests)
        real_sync = RemoteCheckpoints.sync

        async def refused(self: RemoteCheckpoints, session: str) -> Any:
            if when == "after it opened":
                for _ in range(400):  # the prepared socket opens meanwhile
                    if len(opened) == 2:
                        break
                    await asyncio.sleep(0.025)
                assert len(opened) == 2
            raise TandemError("busy", "an interrupted rewind is not settled yet")

        monkeypatch.setattr(RemoteCheckpoints, "sync", refused)
        with pytest.raises(TandemError) as err:
            await chat(app, sid, "two")
        assert err.value.code == "busy"
        # Whatever was opened for it is closed, socket and client; nothing was posted.
        for got in opened[1:]:
            assert got.stream._ws is None and got.client._http.is_closed
        assert len(opened) == (2 if when == "after it opened" else 1)
        assert len(server_events(server, cid)) == events and len(fake.requests) == asked
        provider = next(p for p in app.turns._providers.values()
                        if isinstance(p, remote_engine.RemoteProvider))
        assert provider._prepared is None
        monkeypatch.setattr(RemoteCheckpoints, "sync", real_sync)
        three = await chat(app, sid, "three")
        assert three.outcome == "succeeded", three.error
        assert three.answer == "third"
    await app.turns.aclose()


async def test_no_conversation_is_started_before_the_checkpoint(
        server: RunningServer, app: App, project: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A directive's (or a first turn's) conversation is started after the checkpoint:
    the server sets its working dir up, which the before-snapshot must not see half done."""
    with FakeOpenAI(agent_script(Reply(text="directive answer"))) as fake:
        configure(app, server, fake)
        sid, _wd = await attached_session(app, project, server)
        before = {c["id"] for c in conversations_on(server)}
        order: list[str] = []
        real_sync, real_start = RemoteCheckpoints.sync, remote_engine.RemoteProvider._start

        async def sync(self: RemoteCheckpoints, session: str) -> Any:
            await asyncio.sleep(0.3)  # time for a prepared start to be sent, were it sent
            order.append("sync")
            return await real_sync(self, session)

        async def start(self: remote_engine.RemoteProvider, client: Any) -> str:
            order.append("start")
            return await real_start(self, client)

        monkeypatch.setattr(RemoteCheckpoints, "sync", sync)
        monkeypatch.setattr(remote_engine.RemoteProvider, "_start", start)
        ended = await directive(app, sid, "DIRECTIVE PROMPT", "implement")
        assert ended.outcome == "succeeded", ended.error
        assert order[:2] == ["sync", "start"]
        assert len({c["id"] for c in conversations_on(server)} - before) == 1
    await app.turns.aclose()
