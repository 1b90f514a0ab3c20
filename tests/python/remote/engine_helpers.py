"""Running tandem turns on the real agent-server, with tandem's fake OpenAI as its LLM."""

from __future__ import annotations

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
              profile: str | None = None, hosts: bool = True) -> None:
    """Push a front-end configuration: the host entry and the LLM credentials."""
    remote_hosts = {HOST: RemoteHost(url=server.url, forward_keys=forward_keys,
                                     agent_profile=profile, api_key=server.api_key)}
    app.turns.configure(ClientConfig(
        remote_hosts=remote_hosts if hosts else {},
        credentials={"openai": {"api_key": LLM_KEY, "base_url": fake.base_url + "/v1"}}))


async def attached_session(app: App, project: Path, server: RunningServer) -> tuple[str, str]:
    """A new session attached to SERVER in a fresh working dir; (session id, server dir)."""
    sid = (await new(app, NewParams(cwd=str(project)))).id
    rel = f"workspace/{secrets.token_hex(6)}"
    target = await app.remote.attach(sid, HOST, server.url, server.api_key, rel)
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
    return await engine.wait(sid, turn)


async def directive(app: App, sid: str, prompt: str, action: str, asker: Any = None,
                    read_only: bool = False) -> TurnEnded:
    """One directive request (its own context) to its end."""
    engine = app.turns.engine
    turn = await engine.accept(TurnSpec(
        session=sid, text=prompt, provider=PROVIDER, permission_mode="ask",
        messages=[Message(role="user", text=prompt)], read_only=read_only,
        directive=DirectiveFrame("w1", "D1", action, 1)), asker)
    return await engine.wait(sid, turn)


def entries(app: App, sid: str) -> list[dict[str, Any]]:
    """SESSION's journal entries as written on disk."""
    lines = Path(app.sessions.journal(sid).path).read_text().splitlines()[1:]
    return [json.loads(line) for line in lines]


def agent_requests(fake: FakeOpenAI) -> list[dict[str, Any]]:
    """The bodies of the requests the server's agent made (those offering tools)."""
    return [r.body for r in fake.requests if isinstance(r.body, dict) and r.body.get("tools")]


def conversations_on(server: RunningServer) -> list[dict[str, Any]]:
    """Every conversation the server holds, as it reports them."""
    headers = {"X-Session-API-Key": server.api_key or ""}
    reply = httpx.get(f"{server.url}/api/conversations/search", headers=headers,
                      params={"limit": 100}, timeout=30).json()
    return list(reply.get("items", []))
