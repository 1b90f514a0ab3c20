"""Running tandem turns on the real agent-server, with tandem's fake OpenAI as its LLM."""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path
from typing import Any

import httpx
from fakes.openai_server import FakeOpenAI
from fakes.script import Match, Reply, Script, Step, ToolCallSpec

from tandem.app import App
from tandem.config.front_end import ClientConfig, RemoteHost
from tandem.providers.base import Message, PermissionAnswer, PermissionRequest
from tandem.sessions.api import NewParams, new
from tandem.turns.engine import DirectiveFrame, TurnEnded, TurnSpec

from .agent_server import RunningServer

PROVIDER = "openai:fake-model"
TURN_LIMIT = 180.0
"""Seconds a test waits for a turn: a hang fails the test instead of the run."""
LLM_KEY = "sk-llm-" + secrets.token_hex(8)
"""The user's LLM key: it must reach the fake LLM and appear in no journal or log."""
HOST = "box"


def agent_script(*replies: Reply) -> Script:
    """REPLIES for the agent's own requests (they offer tools); titles get a default."""
    return Script([Step(match=Match(has_tools=True), reply=r) for r in replies],
                  default=Reply(text="a title"))


def run_command(command: str, text: str = "") -> Reply:
    """The model asks the server's terminal tool to run COMMAND."""
    return Reply(text=text, tool_calls=[ToolCallSpec(
        name="terminal", input={"command": command, "summary": "run it"})])


def configure(app: App, server: RunningServer, fake: FakeOpenAI, *, forward_keys: bool = True,
              profile: str | None = None, hosts: bool = True, url: str | None = None) -> None:
    """Push a front-end configuration: the host entry (at URL) and the LLM credentials."""
    remote_hosts = {HOST: RemoteHost(url=url or server.url, forward_keys=forward_keys,
                                     agent_profile=profile, api_key=server.api_key)}
    app.turns.configure(ClientConfig(
        remote_hosts=remote_hosts if hosts else {},
        credentials={"openai": {"api_key": LLM_KEY, "base_url": fake.base_url + "/v1"}}))


async def attached_session(app: App, project: Path, server: RunningServer,
                           url: str | None = None) -> tuple[str, str]:
    """A new session attached to SERVER (at URL) in a fresh working dir; (id, server dir)."""
    sid = (await new(app, NewParams(cwd=str(project)))).id
    rel = f"workspace/{secrets.token_hex(6)}"
    target = await app.remote.attach(sid, HOST, url or server.url, server.api_key, rel)
    Path(target.resolved_working_dir).mkdir(parents=True, exist_ok=True)
    return sid, target.resolved_working_dir


def answering(answer: PermissionAnswer, asked: list[PermissionRequest]) -> Any:
    """A headless asker that notes each question in ASKED and answers ANSWER."""
    async def ask(request: PermissionRequest, _interaction: str) -> PermissionAnswer:
        asked.append(request)
        return answer
    return ask


async def chat(app: App, sid: str, text: str, asker: Any = None, mode: str = "ask",
               read_only: bool = False) -> TurnEnded:
    """One chat turn to its end."""
    engine = app.turns.engine
    turn = await engine.accept(TurnSpec(session=sid, text=text, provider=PROVIDER,
                                        permission_mode=mode,  # type: ignore[arg-type]
                                        read_only=read_only), asker)
    return await asyncio.wait_for(engine.wait(sid, turn), TURN_LIMIT)


async def directive(app: App, sid: str, prompt: str, action: str, asker: Any = None,
                    read_only: bool = False) -> TurnEnded:
    """One directive request (its own context) to its end."""
    engine = app.turns.engine
    turn = await engine.accept(TurnSpec(
        session=sid, text=prompt, provider=PROVIDER, permission_mode="ask",
        messages=[Message(role="user", text=prompt)], read_only=read_only,
        directive=DirectiveFrame("w1", "D1", action, 1)), asker)
    return await asyncio.wait_for(engine.wait(sid, turn), TURN_LIMIT)


def entries(app: App, sid: str) -> list[dict[str, Any]]:
    """SESSION's journal entries as written on disk."""
    lines = Path(app.sessions.journal(sid).path).read_text().splitlines()[1:]
    return [json.loads(line) for line in lines]


def agent_requests(fake: FakeOpenAI) -> list[dict[str, Any]]:
    """The bodies of the requests the server's agent made (those offering tools)."""
    return [r.body for r in fake.requests if isinstance(r.body, dict) and r.body.get("tools")]


def conversations_on(server: RunningServer) -> list[dict[str, Any]]:
    """Every conversation the server holds, as it reports them."""
    return list(_get(server, "/api/conversations/search", limit=100).get("items", []))


def _get(server: RunningServer, path: str, **params: Any) -> Any:
    headers = {"X-Session-API-Key": server.api_key or ""}
    return httpx.get(f"{server.url}{path}", headers=headers, params=params, timeout=30).json()


def sid_conversation(log: list[dict[str, Any]]) -> str:
    """The root chat's server conversation, as the journal recorded it."""
    return str([e for e in log if e["type"] == "acp_session"][-1]["acp_session_id"])


def conversation_state(server: RunningServer, cid: str) -> dict[str, Any]:
    """The conversation CID as the server reports it."""
    return dict(_get(server, f"/api/conversations/{cid}"))


def server_events(server: RunningServer, cid: str) -> list[dict[str, Any]]:
    """Every event of conversation CID, from the server's own search (all pages)."""
    out: list[dict[str, Any]] = []
    page: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 100}
        if page:
            params["page_id"] = page
        reply = _get(server, f"/api/conversations/{cid}/events/search", **params)
        out += reply.get("items", [])
        page = reply.get("next_page_id")
        if not page:
            return out
