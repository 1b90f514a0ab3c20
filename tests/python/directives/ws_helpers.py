"""Helpers for workspace tests: an App wired to a fake model, acting and waiting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.script import Reply, ToolCallSpec

from tandem.adapters import directives as handlers
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.events import RecordingSink
from tandem.protocol import directives as dp
from tandem.protocol.sessions import NewParams
from tandem.turns.engine import TurnSpec
from wire_replies import Plain

api = Plain(handlers)  # replies as the wire's JSON, read by key

KEY = "sk-workspace-test-key"


def make_app(home: Path, fake: Any) -> App:
    """An App whose openai provider talks to FAKE."""
    app = App(home=home, events=RecordingSink())
    app.turns.config.credentials = {"openai": {"api_key": KEY,
                                                "base_url": fake.base_url + "/v1"}}
    return app


async def new_session(app: App, root: Path) -> str:
    """Create a session in ROOT; return its id."""
    return (await new(app, NewParams(cwd=str(root)))).id


async def chat(app: App, session: str, text: str) -> Any:
    """Run one root-chat turn to its end."""
    service = app.turns
    turn = await service.engine.accept(TurnSpec(session=session, text=text,
                                                provider="openai:fake-model",
                                                permission_mode="auto-edit"))
    return await service.engine.wait(session, turn)


async def create(app: App, root: Path, request: str, path: str = "a.txt", start: int = 1,
                 end: int = 1, text: str = "hello world\n", **kw: Any) -> dict[str, Any]:
    """Create a directive through the method handler."""
    return await api.create(app, dp.CreateParams(root=str(root), path=path, start_line=start,
                                                  end_line=end, text=text, request=request, **kw))


async def act(app: App, root: Path, directive: str, action: str, text: str = "",
              wait: bool = True, **kw: Any) -> tuple[dict[str, Any], Any]:
    """Run ACTION through `directives/act`; wait for the turn's end unless told not to."""
    kw.setdefault("provider", "openai:fake-model")
    kw.setdefault("permission_mode", "auto-edit")
    reply = await api.act(app, dp.ActParams(root=str(root), id=directive, action=action,
                                                    text=text, **kw))
    ended = None
    if wait:
        ended = await app.turns.engine.wait(reply["session"], reply["turn"])
    return reply, ended


async def get(app: App, root: Path, directive: str, **kw: Any) -> dict[str, Any]:
    """The record of DIRECTIVE."""
    return await api.get(app, dp.GetParams(root=str(root), id=directive, **kw))


def body_text(req: Any) -> str:
    """Everything a request body sent, as one string."""
    return json.dumps(req.body, ensure_ascii=False)


def content(msg: dict[str, Any]) -> str:
    """A message's text content."""
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


def marker_model(body: dict[str, Any]) -> Reply:
    """A scripted model that answers by markers in the latest user message."""
    msgs = body["messages"]
    users = [m for m in msgs if m.get("role") == "user"]
    prompt = content(users[-1]) if users else ""
    after_tool = msgs[-1].get("role") == "tool"
    if "FEEDBACK-1" in prompt:
        return Reply(text="IMPL-A2 added a bang") if after_tool else Reply(
            text="Adding the bang.", tool_calls=[ToolCallSpec(
                name="write_file", input={"path": "a.txt", "content": "HELLO WORLD!\n"})])
    if "as agreed in the discussion" in prompt:
        return Reply(text="IMPL-A1 wrote the loud greeting") if after_tool else Reply(
            text="Writing it.", tool_calls=[ToolCallSpec(
                name="write_file", input={"path": "a.txt", "content": "HELLO WORLD\n"})])
    if "DISCUSS-WRITE" in prompt:
        return Reply(text="WRITE-WAS-REFUSED") if after_tool else Reply(
            text="Let me just write it.", tool_calls=[ToolCallSpec(
                name="write_file", input={"path": "b.txt", "content": "sneaky\n"})])
    if "FAIL-NOW" in prompt:
        return Reply(status=400, message="the model refuses")
    for marker, answer in (("DISCUSS-Q1", "DISCUSS-A1 yes, shout"),
                           ("DR-Q", "DR-A the first attempt looks fine"),
                           ("ROOTCHAT-SECRET", "ROOT-ANSWER-XYZ")):
        if marker in prompt:
            return Reply(text=answer)
    return Reply(text="OK")
