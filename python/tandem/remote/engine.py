"""The remote engine: a `Provider` whose turns run on an OpenHands agent-server.

One long-lived server conversation per root chat (its id goes to the journal
as an agent's conversation does); a directive request opens a conversation of
its own each time and keeps no id. Every conversation is created with the
server's ``AlwaysConfirm`` policy, so each action waits; tandem decides each
one by its own rules (`tandem.tools.permissions.decide`: a discussion refuses
every write and execute, whatever the server would allow) and asks the user
through the sink when the rule says ask. Cancel is ``/interrupt``; the turn
ends when the conversation reaches finished / error / stuck.

Guidance given mid-turn (``turns/steer``) goes to the server only where its
agent loop is stopped and every tool call has its result, so it can never
land between a call and its result (the server's loop asks the model again
as soon as a result is in, and releases its lock during each LLM call, so a
message posted while it runs lands mid-step). That is the idle after a
refusal: tandem refuses the calls waiting for confirmation when a steer
waits (they never ran: "superseded", as the server's own rule for a message
that arrives mid-step), or when its rules or the user refused them; the
steer is then appended (``run: false``) and the agent run again, so the
model's next request carries the refusals, then the guidance. It is
journaled when the server's stream echoes it; a turn that ends first
leaves it to the queue, as the native engine does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from tandem.protocol.remote import RemoteTarget
from tandem.providers.base import (
    Conversation,
    Message,
    Outcome,
    PermissionRequest,
    RemoteTurnStart,
    SteeredSink,
    TurnRequest,
    TurnResult,
    TurnSink,
    Usage,
)
from tandem.remote.agent_llm import AgentChoice
from tandem.remote.client import AgentServerClient
from tandem.remote.errors import RemoteError
from tandem.remote.events_map import Action, EventMap, minus, usage_of
from tandem.remote.stream import SessionStream, StreamOptions
from tandem.tools.permissions import SessionGrants, decide
from tandem.tools.protected import question, remote_reason

log = logging.getLogger("tandem.remote.engine")

MAX_RERUNS = 25
"""Times one turn lets the agent go on after a refusal before it fails the turn."""
INTERRUPT_TIMEOUT = 10.0
"""Seconds a cancel waits for the server to take ``/interrupt``."""
SUPERSEDED = ("not run: the user steered the turn before it ran; their guidance "
              "follows (ask again if it is still needed)")
"""Why tool calls waiting when a steer came were refused (the model sees it)."""


def prompt_text(request: TurnRequest, new_conversation: bool) -> str:
    """What to post as the user's message.

    A continued conversation has the context on the server: only the new
    message goes. A new one (a directive, the first remote turn, after a
    rewind) gets the whole context as text, the system prompt first.
    """
    if not new_conversation:
        return request.messages[-1].text if request.messages else ""
    parts = [f"<instructions>\n{request.system}\n</instructions>"] if request.system else []
    earlier = request.messages[:-1]
    if earlier:
        parts.append("<earlier-conversation>\n" + "\n\n".join(
            _render(m) for m in earlier) + "\n</earlier-conversation>")
    if request.messages:
        parts.append(request.messages[-1].text)
    return "\n\n".join(parts)


def _render(m: Message) -> str:
    if m.role == "tool":
        return f"[tool result{' (error)' if m.is_error else ''}] {m.text}"
    calls = "".join(f"\n[tool call {c.name}] {c.input}" for c in m.tool_calls)
    return f"[{m.role}] {m.text}{calls}"


class RemoteProvider:
    """Runs turns on the agent-server of TARGET with the agent AGENT names."""

    accepts_steering = True
    """Guidance given mid-turn goes to the server at its next stop (module docstring)."""

    def __init__(self, name: str, target: RemoteTarget, agent: AgentChoice,
                 session_key: SecretStr | None = None, *,
                 grants: SessionGrants | None = None, conversation_id: str | None = None,
                 stream_options: StreamOptions | None = None) -> None:
        self.name = name
        self.target = target
        self.agent = agent
        self._session_key = session_key
        self.grants = grants or SessionGrants()
        self._conversation_id = conversation_id
        self._how = "resume"
        self._last: Conversation | None = None
        self._rejected = False
        """The last confirmation was answered with a rejection (the server then idles)."""
        self.stream_options: StreamOptions = stream_options.copy() if stream_options else {}
        """Passed to `SessionStream` (attempts, backoff: tests make them short)."""
        self._prepared: _Prepared | None = None
        """The next turn's conversation and socket, opening (`prepare_turn`)."""
        self._closing: set[asyncio.Future[None]] = set()
        self._allowed = False
        """This turn let an action run (a confirmation answered with accept)."""

    def __repr__(self) -> str:
        return f"RemoteProvider({self.name!r}, {self.target.host!r})"

    # -- the conversation of the root chat ------------------------------------

    @property
    def conversation(self) -> Conversation | None:
        """The root chat's server conversation as the last turn left it."""
        return self._last

    @property
    def conversation_id(self) -> str | None:
        """The server conversation the next root-chat turn continues."""
        return self._conversation_id

    def reset_conversation(self, conversation_id: str | None = None) -> None:
        """Continue CONVERSATION_ID next time, or (None) start a new, seeded one."""
        self._conversation_id = conversation_id
        self._last = None

    async def image_refusal(self, root: Path) -> str | None:
        """Always a refusal: an agent-server conversation takes the text of a message only."""
        return (f"The remote engine on {self.target.host} cannot take images: send the text "
                "alone (the image stays attached in the composer)")

    # -- a turn -------------------------------------------------------------------

    def _client(self) -> AgentServerClient:
        return AgentServerClient(self.target.url, self._session_key)

    async def _start(self, client: AgentServerClient) -> str:
        body: dict[str, object] = {
            **self.agent.body(),
            "workspace": {"working_dir": self.target.resolved_working_dir},
            "confirmation_policy": {"kind": "AlwaysConfirm"},
        }
        reply = await client.start_conversation(body)
        return str(reply["id"])

    async def _conversation_for(self, client: AgentServerClient, isolated: bool,
                                may_start: bool) -> _Opened | None:
        """The conversation this turn runs in, its state and its socket, open.

        The state is the snapshot the socket sends on connect (``GET`` only from
        a server that sends none); a conversation the server no longer knows
        (the socket's ``remote-gone``), or an id that is not the server's (not
        a UUID: another engine's), is replaced by a new one. Nothing here
        changes anything on the server but that start, which only MAY_START
        makes (None without it: the server sets a new conversation's working
        dir up, so never before the pre-turn checkpoint).
        """
        cid = None if isolated else self._conversation_id
        if cid and _is_uuid(cid):
            try:
                return await self._connected(client, cid, new=False)
            except RemoteError as e:
                if e.code != "remote-gone":
                    raise
        if not may_start:
            return None
        if cid:
            log.info("remote conversation %s is gone; starting a new one", cid)
        return await self._connected(client, await self._start(client), new=True)

    async def _connected(self, client: AgentServerClient, cid: str, new: bool) -> _Opened:
        stream = self._stream(client, cid)
        try:
            await stream.open()
            state = stream.initial_state
            if state is None:
                state = await client.conversation(cid)
        except BaseException:
            await _quietly(stream.close())
            raise
        return _Opened(client, cid, new, state, stream)

    def _stream(self, client: AgentServerClient, cid: str) -> SessionStream:
        return SessionStream(self.target.url, cid, client.socket_headers, **self.stream_options)

    async def _open(self, isolated: bool, may_start: bool = True) -> _Opened | None:
        client = self._client()
        try:
            opened = await self._conversation_for(client, isolated, may_start)
        except BaseException:
            await client.aclose()
            raise
        if opened is None:
            await client.aclose()
        return opened

    def prepare_turn(self, isolated: bool) -> None:
        """Start opening the next turn's conversation and socket (`PreparesTurns`).

        Called by the engine before the pre-turn checkpoint, whose mirror sync
        is a round trip to the same server: the two overlap. Nothing is posted.
        """
        if not isinstance(isolated, bool):
            raise TypeError("isolated must be a bool")
        if self._prepared is not None:  # never left by the engine; closed, not leaked
            stale = self._prepared
            self._prepared = None
            self._closing.add(asyncio.ensure_future(_settle(stale.task)))
            self._closing = {t for t in self._closing if not t.done()}
        self._prepared = _Prepared(isolated, self._conversation_id, asyncio.ensure_future(
            self._open(isolated, may_start=False)))

    async def abandon_prepared(self) -> None:
        """Close what `prepare_turn` opened: the turn will not run."""
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            await _settle(prepared.task)

    async def _opened_for(self, request: TurnRequest) -> _Opened:
        """What `prepare_turn` opened for REQUEST, else opened now."""
        prepared, self._prepared = self._prepared, None
        if prepared is not None and (prepared.isolated != request.isolated or (
                not request.isolated and prepared.conversation_id != self._conversation_id)):
            await _settle(prepared.task)  # prepared for another turn: not this one's
            prepared = None
        opened = None
        if prepared is not None:
            try:
                opened = await prepared.task
            except asyncio.CancelledError:
                await _settle(prepared.task)
                raise
        if opened is None:  # nothing prepared, or a conversation to start: now, after it
            opened = await self._open(request.isolated)
        assert opened is not None  # `_open` may start one
        return opened

    async def run(self, request: TurnRequest, sink: TurnSink) -> TurnResult:
        """Run one turn on the server, reporting its events through SINK."""
        opened = await self._opened_for(request)
        client, cid, state, stream = opened.client, opened.cid, opened.state, opened.stream
        try:
            if opened.new:
                self._how = "seeded" if len(request.messages) > 1 else "new"
            else:
                self._how = "resume"
            if not request.isolated:
                self._conversation_id = cid
                self._last = Conversation(id=cid, how=self._how)
            baseline = usage_of(state.get("stats"))
            # The conversation's HEAD before this turn's message: a Rewind before the
            # turn navigates back to it (journaled as a ``remote_turn`` entry).
            leaf = state.get("leaf_event_id")
            start = RemoteTurnStart(conversation_id=cid,
                                    after_event_id=leaf if isinstance(leaf, str) else None)
            events = EventMap(sink)
            self._allowed = False
            try:
                await client.send_message(cid, prompt_text(request, opened.new))
                await self._follow(client, cid, stream, events, request)
            except asyncio.CancelledError:
                await self._interrupt(client, cid)
                raise
            finally:
                events.finish()
                await _quietly(stream.close())
        finally:
            await client.aclose()
        result = self._result(events, baseline, cid, request)
        if not request.isolated:  # a directive's conversation is never resumed nor rewound
            result.remote_turn = start
        return result

    async def _follow(self, client: AgentServerClient, cid: str, stream: SessionStream,
                      events: EventMap, request: TurnRequest) -> None:
        """Map frames until the conversation's status ends the turn."""
        reconnected = False
        # Whether a durable event of this turn arrived: the snapshot sent on connect
        # shows the status the last turn left (``finished``), which must not end this one.
        live = False
        asked: set[str] = set()
        reruns = 0
        ran = False  # the server said running in this turn (a finished one resets via idle)
        self._rejected = False
        sink = events.sink
        steered = sink if isinstance(sink, SteeredSink) else None
        async for frame in stream.frames():
            kind = frame.get("type")
            if kind == "reconnected":
                reconnected = True
                continue
            if kind == "delta":
                events.on_delta(frame)
                continue
            event = frame.get("event")
            if kind not in ("durable", "transient") or not isinstance(event, dict):
                continue  # item_started / item_aborted: the sink needs nothing
            events.on_event(event)
            if steered is not None:
                for text in events.user_texts:
                    steered.steer_taken(text)
            events.user_texts.clear()
            live = live or kind == "durable"
            if not live:
                continue
            ran = ran or (kind == "durable" and events.status == "running")
            if reconnected and event.get("key") == "full_state":
                reconnected = False
                if events.status in ("idle", "paused"):
                    raise RemoteError("remote-failed", (
                        f"the agent-server {self.target.host} stopped running conversation "
                        f"{cid} while the socket was down (status {events.status}; "
                        "was it restarted?)"))
            if events.ended:
                return
            if events.status == "idle" and ran and kind == "durable" and (
                    event.get("key") == "execution_status"):
                # The server stops after a rejection; the agent must hear it and go
                # on, as a native model does. An idle without one: the run ended early.
                if not self._rejected:
                    raise RemoteError("remote-failed", (
                        f"the agent on {self.target.host} stopped (idle) before finishing"))
                reruns += 1
                if reruns > MAX_RERUNS:
                    raise RemoteError("remote-failed", (
                        f"the agent asked again after {MAX_RERUNS} refusals; stopping"))
                self._rejected = False
                if steered is not None:
                    # Stopped, every call answered: the one safe place for a message.
                    for text in steered.hand_steers():
                        await client.send_message(cid, text, run=False)
                await client.run(cid)
                continue
            if events.status == "paused":
                raise RemoteError("remote-failed",
                                  f"conversation {cid} was paused on {self.target.host}")
            if events.status == "waiting_for_confirmation" and event.get("key") in (
                    "execution_status", "full_state"):
                pending = [a for a in events.pending if a.call_id not in asked]
                if pending:
                    asked.update(a.call_id for a in pending)
                    if steered is not None and steered.steers:
                        # Not run yet, asked before the guidance: superseded by it.
                        self._rejected = True
                        await client.respond_to_confirmation(cid, False, SUPERSEDED)
                    else:
                        await self._confirm(client, cid, pending, request, sink=events.sink)

    async def _confirm(self, client: AgentServerClient, cid: str, pending: list[Action],
                       request: TurnRequest, sink: TurnSink) -> None:
        """Decide every action waiting, asking where tandem's rules say ask; answer once."""
        refused: list[str] = []
        for action in pending:
            decision = decide(action.kind, request.permission_mode, request.read_only,
                              self.grants.granted(request.session_id, action.tool))
            path = action.input.get("path")
            reason = (remote_reason(path, self.target.resolved_working_dir,
                                    request.protected_paths)
                      if action.kind == "edit" and isinstance(path, str) else None)
            if reason is not None and decision != "refuse":
                decision = "ask"  # in every mode, whatever was allowed for the session
            if decision == "ask":
                answer = await sink.ask_permission(PermissionRequest(
                    call_id=action.call_id, tool=action.tool, kind=action.kind,
                    title=action.title if reason is None else question(action.title, reason),
                    input=action.input, once_only=reason is not None))
                if answer == "allow_session" and reason is None:
                    self.grants.grant(request.session_id, action.tool)
                decision = "refuse" if answer == "reject" else "allow"
            if decision == "refuse":
                refused.append(action.title)
        self._rejected = bool(refused)
        if refused:
            why = ("read-only turn: no write or command may run" if request.read_only
                   else "the user refused")
            await client.respond_to_confirmation(cid, False, f"{why}: {'; '.join(refused)}")
        else:
            self._allowed = True
            await client.respond_to_confirmation(cid, True, "allowed in tandem")

    async def _interrupt(self, client: AgentServerClient, cid: str) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(client.interrupt(cid)), INTERRUPT_TIMEOUT)
        except Exception as e:  # the turn ends aborted anyway; say why it may go on
            log.warning("could not interrupt remote conversation %s: %s", cid, e)

    def _result(self, events: EventMap, baseline: Usage, cid: str,
                request: TurnRequest) -> TurnResult:
        usage = minus(events.usage, baseline)
        outcome: Outcome
        if events.status == "finished":
            outcome, error = "succeeded", None
        else:
            outcome = "failed"
            error = (f"the agent on {self.target.host} is {events.status}"
                     + (f": {events.error}" if events.error else ""))
        # Every action waits for tandem's confirmation (``AlwaysConfirm``) but a lone
        # finish or think, which change nothing: none allowed, none seen to run → no
        # file of the workspace changed by this turn.
        untouched = not self._allowed and not events.ran_tool
        return TurnResult(outcome=outcome, error=error, usage=usage,
                          ran_shell=events.ran_shell, workspace_untouched=untouched,
                          acp_session_id=None if request.isolated else cid)

    async def close(self) -> None:
        """Close a prepared turn's connections; conversations stay on the server."""
        await self.abandon_prepared()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)


@dataclass
class _Opened:
    """One turn's client, conversation (NEW: started for it), its state and open socket."""

    client: AgentServerClient
    cid: str
    new: bool
    state: dict[str, Any]
    stream: SessionStream


@dataclass
class _Prepared:
    """A turn's `_Opened`, opening, and what it was opened for."""

    isolated: bool
    conversation_id: str | None
    task: asyncio.Future[_Opened | None]
    """None when the turn needs a new conversation: started in `run`, not here."""


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


async def _quietly(closing: Awaitable[None]) -> None:
    """Await CLOSING, a socket's close: its failure changes nothing of the turn."""
    with contextlib.suppress(Exception):
        await closing


async def _settle(task: asyncio.Future[_Opened | None]) -> None:
    """Cancel TASK if it still runs, and close what it opened."""
    if not task.done():
        task.cancel()
    await asyncio.wait([task])  # the caller's own cancellation still propagates
    if task.cancelled() or task.exception() is not None:
        return  # nothing left open (`_open` closes on failure)
    opened = task.result()
    if opened is None:
        return
    await _quietly(opened.stream.close())
    await opened.client.aclose()
