"""A scripted ACP agent: a real process speaking ACP over stdio (the `acp` SDK's
agent side), for fast tests of what the Claude adapter cannot be made to do on
demand (die at a chosen moment, ignore a cancel, refuse a resume…).

Usage: ``python fake_agent.py SCRIPT.json LOG.jsonl``. Every request and
notification the agent receives is appended to LOG as one JSON line
``{"method": ..., "params": ...}``. SCRIPT::

    {"capabilities": {"load": false, "resume": false, "close": true, "image": false},
     "protocol_version": 1,
     "known_sessions": ["s-old"],        # ids load/resume accept
     "die_in": "initialize",             # or "new_session": exit(3) there
     "modes": {"current": "auto", "available": ["default", "plan", "auto"]},
     "prompts": [[action, ...], ...]}    # one list per session/prompt, in order

Actions: ``{"say": T}``, ``{"think": T}``, ``{"plan": [[content, status], ...]}``,
``{"tool": {"id", "title", "kind", "input", "status"}}``,
``{"update": {"id", "input", "status", "output"}}``,
``{"ask": {"id", "title", "kind", "input", "write": PATH, "content": C}}``
(asks permission; writes PATH when allowed; reports the result),
``{"stderr": T}``, ``{"exit": CODE}``, ``{"sleep": S}``, ``{"hang": true}``
(until cancelled, then stop ``cancelled``), ``{"hang_forever": true}``,
``{"env": VAR}`` / ``{"cwd": true}`` (say a value), ``{"spawn_child": S}``
(start ``sleep S`` and say its pid), ``{"stop": REASON}``, ``{"error": MSG}``,
``{"raw_update": U}`` (a ``session/update`` whose update is U as given, even
off the schema), ``{"fs_write": [PATH, C]}`` / ``{"fs_read": PATH}`` (call the
client's file system; its error is logged as ``fs-error``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    RequestError,
    plan_entry,
    run_agent,
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionMode,
    SessionModeState,
    SessionResumeCapabilities,
    ToolCallUpdate,
)


class FakeAgent:
    """The agent: follows SCRIPT, logs to LOG."""

    def __init__(self, script: dict[str, Any], log: Path) -> None:
        self.script = script
        self.log_path = log
        self.client: Any = None
        self.prompt_index = 0
        self.sessions: set[str] = set()
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    def _log(self, method: str, params: dict[str, Any]) -> None:
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"method": method, "params": params}, default=str) + "\n")

    def _maybe_die(self, where: str) -> None:
        if self.script.get("die_in") == where:
            print(f"fake agent: dying in {where}", file=sys.stderr, flush=True)
            os._exit(3)

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        caps = kwargs.get("client_capabilities")
        self._log("initialize", {"protocol_version": protocol_version, "caps": repr(caps)})
        self._maybe_die("initialize")
        wanted = self.script.get("capabilities", {})
        session_caps = SessionCapabilities(
            resume=SessionResumeCapabilities() if wanted.get("resume") else None,
            close=SessionCloseCapabilities() if wanted.get("close", True) else None,
        )
        return InitializeResponse(
            protocol_version=self.script.get("protocol_version", PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=bool(wanted.get("load")), session_capabilities=session_caps,
                prompt_capabilities=PromptCapabilities(image=bool(wanted.get("image"))),
            ),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self._log("session/new", {"cwd": cwd})
        self._maybe_die("new_session")
        session_id = f"s-{uuid.uuid4().hex[:8]}"
        self.sessions.add(session_id)
        # Persisted like a real agent's transcripts: a later process can resume it.
        with open(self._store(), "a", encoding="utf-8") as f:
            f.write(session_id + "\n")
        return NewSessionResponse(session_id=session_id, modes=self._modes())

    def _modes(self) -> SessionModeState | None:
        spec = self.script.get("modes")
        if not spec:
            return None
        return SessionModeState(
            current_mode_id=spec["current"],
            available_modes=[SessionMode(id=m, name=m) for m in spec["available"]],
        )

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> None:
        self._log("session/set_mode", {"session_id": session_id, "mode_id": mode_id})
        if mode_id not in self.script.get("modes", {}).get("available", []):
            raise RequestError.invalid_params({"details": f"no mode {mode_id}"})

    def _store(self) -> Path:
        return self.log_path.with_suffix(".sessions")

    def _known(self, session_id: str) -> bool:
        stored = self._store().read_text().split() if self._store().exists() else []
        return session_id in {*self.sessions, *stored, *self.script.get("known_sessions", [])}

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        self._log("session/load", {"cwd": cwd, "session_id": session_id})
        if not self._known(session_id):
            raise RequestError.resource_not_found(session_id)
        self.sessions.add(session_id)
        # A load replays the history; the client must not take it for a new turn.
        await self.client.session_update(session_id, update_agent_message_text("OLD HISTORY"))
        return LoadSessionResponse()

    async def resume_session(
        self, cwd: str, session_id: str, **kwargs: Any
    ) -> ResumeSessionResponse:
        self._log("session/resume", {"cwd": cwd, "session_id": session_id})
        if not self._known(session_id):
            raise RequestError.resource_not_found(session_id)
        self.sessions.add(session_id)
        return ResumeSessionResponse()

    async def close_session(self, session_id: str, **kwargs: Any) -> dict[str, Any]:
        self._log("session/close", {"session_id": session_id})
        self.sessions.discard(session_id)
        return {}

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._log("session/cancel", {"session_id": session_id})
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        images = [{"mime_type": b.mime_type, "data": b.data} for b in prompt
                  if getattr(b, "type", "") == "image"]
        self._log("session/prompt", {"session_id": session_id, "text": text,
                                     **({"images": images} if images else {})})
        if session_id not in self.sessions:
            raise RequestError.invalid_params({"details": f"unknown session {session_id}"})
        prompts = self.script.get("prompts", [])
        actions = prompts[self.prompt_index] if self.prompt_index < len(prompts) else []
        self.prompt_index += 1
        self.cancelled[session_id] = asyncio.Event()
        stop = "end_turn"
        for action in actions:
            result = await self._act(session_id, action)
            if result is not None:
                stop = result
                break
        return PromptResponse(stop_reason=stop)

    async def _say(self, session_id: str, text: str) -> None:
        await self.client.session_update(session_id, update_agent_message_text(text))

    async def _act(self, sid: str, action: dict[str, Any]) -> str | None:
        client = self.client
        if "say" in action:
            await self._say(sid, action["say"])
        elif "think" in action:
            await client.session_update(sid, update_agent_thought_text(action["think"]))
        elif "plan" in action:
            entries = [plan_entry(c, status=s) for c, s in action["plan"]]
            await client.session_update(sid, update_plan(entries))
        elif "tool" in action:
            t = action["tool"]
            await client.session_update(
                sid,
                start_tool_call(
                    t["id"],
                    t.get("title", t["id"]),
                    kind=t.get("kind"),
                    status=t.get("status", "pending"),
                    raw_input=t.get("input", {}),
                ),
            )
        elif "update" in action:
            u = action["update"]
            await client.session_update(
                sid,
                update_tool_call(
                    u["id"],
                    status=u.get("status"),
                    raw_input=u.get("input"),
                    raw_output=u.get("output"),
                ),
            )
        elif "ask" in action:
            await self._ask(sid, action["ask"])
        elif "stderr" in action:
            print(action["stderr"], file=sys.stderr, flush=True)
        elif "exit" in action:
            os._exit(int(action["exit"]))
        elif "sleep" in action:
            await asyncio.sleep(float(action["sleep"]))
        elif action.get("hang"):
            await self.cancelled[sid].wait()
            return "cancelled"
        elif action.get("hang_forever"):
            await asyncio.sleep(3600)
        elif "env" in action:
            await self._say(sid, os.environ.get(action["env"], "<unset>"))
        elif action.get("cwd"):
            await self._say(sid, os.getcwd())
        elif "spawn_child" in action:
            child = subprocess.Popen(["sleep", str(action["spawn_child"])])
            await self._say(sid, str(child.pid))
        elif "stop" in action:
            return str(action["stop"])
        elif "error" in action:
            raise RequestError.internal_error({"details": action["error"]})
        elif "raw_update" in action:
            # Past the SDK's own models, as a buggy agent would send it.
            await client._conn.send_notification(
                "session/update", {"sessionId": sid, "update": action["raw_update"]})
        elif "fs_write" in action or "fs_read" in action:
            await self._fs(sid, action)
        return None

    async def _fs(self, sid: str, action: dict[str, Any]) -> None:
        try:
            if "fs_write" in action:
                path, content = action["fs_write"]
                await self.client.write_text_file(content=content, path=path, session_id=sid)
            else:
                await self.client.read_text_file(path=action["fs_read"], session_id=sid)
        except RequestError as exc:
            self._log("fs-error", {"code": exc.code, "message": str(exc), "data": exc.data})

    async def _ask(self, sid: str, spec: dict[str, Any]) -> None:
        call = ToolCallUpdate(
            tool_call_id=spec["id"],
            title=spec.get("title", spec["id"]),
            kind=spec.get("kind", "edit"),
            raw_input=spec.get("input", {}),
        )
        options = [
            PermissionOption(option_id="yes-always", name="Always", kind="allow_always"),
            PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        response = await self.client.request_permission(
            session_id=sid, tool_call=call, options=options
        )
        outcome = response.outcome
        chosen = getattr(outcome, "option_id", None)
        self._log(
            "permission-outcome", {"id": spec["id"], "outcome": outcome.outcome, "option": chosen}
        )
        allowed = chosen in ("yes", "yes-always")
        if allowed and spec.get("write"):
            Path(spec["write"]).write_text(spec.get("content", ""), encoding="utf-8")
        await self.client.session_update(
            sid,
            update_tool_call(
                spec["id"],
                status="completed" if allowed else "failed",
                raw_output="written" if allowed else "refused by the user",
            ),
        )


async def main(script_path: str, log_path: str) -> None:
    script = json.loads(Path(script_path).read_text(encoding="utf-8"))
    await run_agent(FakeAgent(script, Path(log_path)), use_unstable_protocol=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
