"""The ACP provider: runs turns through an external agent process.

One provider owns one agent process (spawned on first use in the workspace
root, initialized once) and, for the session's root chat, one long-lived ACP
session. A root chat continues an earlier ACP conversation through
``session/resume`` or ``session/load`` when the agent offers them, else a new
ACP session is seeded from the projection; `AcpProvider.last_session` says
which (the journal's ``acp_session`` entry). An isolated (directive) request
always opens a fresh ``session/new``, never loads or resumes, and its id is
never returned.

tandem advertises the ``fs/*`` and ``terminal`` client capabilities
(`acp_client`): an agent that uses them reads the user's buffers (unsaved
edits included), writes through them, and runs commands in terminals the
backend runs under the native shell tool's rules. An agent that does not
use them reads, writes and runs commands itself, after asking permission.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from acp import (
    PROTOCOL_VERSION,
    Client,
    RequestError,
    connect_to_agent,
    image_block,
    text_block,
)
from acp.client.connection import ClientSideConnection
from acp.connection import StreamEvent
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    PromptResponse,
    SessionModeState,
)

from tandem.editor import EditorBridge
from tandem.protocol.base import TandemError
from tandem.providers.acp_client import AcpClient, error_text
from tandem.providers.acp_errors import (
    _AgentDied,
    _checked_id,
    _exception,
    _StartError,
    _uncancel,
)
from tandem.providers.acp_models import AcpAgentConfig, AcpSessionInfo, SessionHow
from tandem.providers.acp_modes import SessionModels, SessionModes
from tandem.providers.acp_options import AcpOptions, OptionKind, SessionOptions
from tandem.providers.acp_process import AgentProcess, agent_environment
from tandem.providers.acp_prompt import first_prompt, followup_prompt, has_history
from tandem.providers.acp_turn import AcpTurn
from tandem.providers.acp_wire import AgentPipes
from tandem.providers.acp_workspace import ProjectTrusted, session_meta
from tandem.providers.base import (
    Conversation,
    Message,
    PermissionMode,
    TurnRequest,
    TurnResult,
    TurnSink,
)

__all__ = ["AcpAgentConfig", "AcpProvider", "AcpSessionInfo", "SessionHow"]

log = logging.getLogger(__name__)

STARTUP_TIMEOUT = 60.0
"""Seconds for ``initialize`` and for opening an ACP session (Claude Code: 2–5 s)."""
CANCEL_GRACE = 10.0
"""Seconds the agent gets to end a cancelled prompt before tandem stops waiting."""

WireObserver = Callable[[str, dict[str, Any]], None]


class AcpProvider:
    """A `Provider` backed by an ACP agent process (see the module docstring)."""

    def __init__(
        self,
        name: str,
        command: list[str],
        env: dict[str, str],
        *,
        root_session_id: str | None = None,
        on_wire: WireObserver | None = None,
        editor: EditorBridge | None = None,
        choices: dict[str, str] | None = None,
        mcp_servers: Callable[[], list[Any]] | None = None,
        project_config_files: list[str] | None = None,
        project_trusted: ProjectTrusted | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise TandemError("invalid", "an ACP agent needs a name")
        try:
            config = AcpAgentConfig(command=command, env=env,
                                    project_config_files=project_config_files or [])
        except ValueError as exc:
            raise TandemError("invalid", f"ACP agent {name!r}: {exc}") from None
        self.name = name
        self.command = config.command
        self.env = config.env
        self.project_config_files = config.project_config_files
        self.project_trusted = project_trusted
        """Whether the project's own agent configuration may be read (None: never)."""
        self.on_wire = on_wire
        self.mcp_servers = mcp_servers
        """The session's enabled MCP servers (`acp.schema` entries) for ``session/new``."""
        self.last_session: AcpSessionInfo | None = None
        """Set by a root-chat turn that opened, resumed or loaded its ACP session."""
        self.agent_info: InitializeResponse | None = None
        self._resume_id = _checked_id(root_session_id)
        self._root_id: str | None = None
        self._process: AgentProcess | None = None
        self._conn: ClientSideConnection | None = None
        self._client = AcpClient(editor)
        self._options = SessionOptions(name, self._client, choices)
        self._root_pending: AcpSessionInfo | None = None
        """A root session opened, not yet prompted (its first turn records it)."""
        self._start_lock = asyncio.Lock()
        self._root_lock = asyncio.Lock()
        self._turns: set[AcpTurn] = set()
        self._edit_grants: set[str] = set()
        """Edit tools allowed for the session (`AcpTurn.grants`), kept across its turns."""
        self._cancel_requested = asyncio.Event()
        self._closed = False

    @classmethod
    def from_config(cls, name: str, config: AcpAgentConfig, **kwargs: Any) -> AcpProvider:
        """A provider for the configured agent NAME."""
        return cls(name, list(config.command), dict(config.env),
                   project_config_files=list(config.project_config_files), **kwargs)

    @property
    def pid(self) -> int | None:
        """The agent process id while it runs."""
        return self._process.pid if self._process and self._process.alive else None

    @property
    def root_session_id(self) -> str | None:
        """The root chat's ACP session id (live, or to be continued)."""
        return self._root_id or self._resume_id

    @property
    def conversation(self) -> Conversation | None:
        """The root chat's ACP session as the last root-chat turn left it."""
        info = self.last_session
        return None if info is None else Conversation(id=info.acp_session_id, how=info.how)

    @property
    def conversation_id(self) -> str | None:
        """The root chat's ACP session id (see `root_session_id`)."""
        return self.root_session_id

    def reset_conversation(self, conversation_id: str | None = None) -> None:
        """The `Provider` name of `reset_root_session`."""
        self.reset_root_session(conversation_id)

    def reset_root_session(self, acp_session_id: str | None = None) -> None:
        """Continue the root chat from ACP_SESSION_ID next time, or (None) start
        a new seeded session: after a rewind or compaction the agent's own
        conversation no longer matches the projection."""
        self._root_id = None
        self._resume_id = _checked_id(acp_session_id)

    # -- process ------------------------------------------------------------

    async def _ensure_started(
        self, request: TurnRequest
    ) -> tuple[ClientSideConnection, AgentProcess]:
        async with self._start_lock:
            if self._closed:
                raise TandemError("closed", f"ACP agent {self.name} was closed")
            if self._process is not None and self._conn is not None and self._process.alive:
                return self._conn, self._process
            await self._drop_process()
            self._meta(request.root)  # refuses before an agent that cannot be isolated runs
            env = agent_environment(self.env, command=self.command)
            try:
                process = await AgentProcess.start(self.command, env, request.root)
            except OSError as exc:
                raise _StartError(
                    f"cannot start ACP agent {self.name} ({self.command[0]}): {exc}"
                ) from None
            observers = [self._observe] if self.on_wire else None
            # Our own message transport: updates off the schema are skipped, not tracebacks.
            pipes = AgentPipes(self.name, process.stdin, process.stdout)
            conn = connect_to_agent(cast(Client, self._client), pipes, observers=observers)
            self._process, self._conn = process, conn
            try:
                info = await self._guard(
                    conn.initialize(
                        protocol_version=PROTOCOL_VERSION,
                        client_capabilities=ClientCapabilities(
                            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                            terminal=True,
                        ),
                        client_info=Implementation(name="tandem", title="tandem", version="0.1.0"),
                    ),
                    process,
                    STARTUP_TIMEOUT,
                )
            except BaseException:
                await self._drop_process()
                raise
            if info.protocol_version != PROTOCOL_VERSION:
                await self._drop_process()
                raise _StartError(
                    f"ACP agent {self.name} speaks protocol {info.protocol_version},"
                    f" tandem speaks {PROTOCOL_VERSION}"
                )
            self.agent_info = info
            return conn, process

    def _observe(self, event: StreamEvent) -> None:
        if self.on_wire is not None:
            self.on_wire(event.direction.value, event.message)

    async def _guard(self, call: Any, process: AgentProcess, timeout: float | None) -> Any:
        """Await CALL, failing early when the agent dies or TIMEOUT passes."""
        task = asyncio.ensure_future(call)
        try:
            done, _ = await asyncio.wait(
                {task, process.exited}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except BaseException:
            task.cancel()
            raise
        if task in done:
            if isinstance(_exception(task), ConnectionError):
                report = await process.exit_report()
                if report is not None:
                    raise _AgentDied(report)
            return task.result()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        if process.exited in done:
            raise _AgentDied(await process.exit_report() or process.describe_exit())
        raise TimeoutError(f"ACP agent {self.name} did not answer within {timeout:.0f} s")

    async def _drop_process(self) -> None:
        conn, process = self._conn, self._process
        self._conn = self._process = None
        self._client.modes.clear()
        self._client.models.clear()
        self._root_pending = None
        await self._client.terminals.close()
        if self._root_id is not None:
            # The live conversation dies with the process: resume it next time.
            self._resume_id, self._root_id = self._root_id, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
        if process is not None:
            await process.stop()

    async def close(self) -> None:
        """Stop the agent process and every process it started."""
        self._closed = True
        for turn in list(self._turns):
            turn.cancel()
        async with self._start_lock:
            await self._drop_process()

    # -- sessions -------------------------------------------------------------

    async def _new_session(
        self, conn: ClientSideConnection, process: AgentProcess, request: TurnRequest
    ) -> str:
        response = await self._guard(
            conn.new_session(cwd=str(request.root), mcp_servers=self._mcp_entries(),
                             **self._meta(request.root)),
            process, STARTUP_TIMEOUT
        )
        acp_id = str(response.session_id)
        self._note_modes(acp_id, response.modes, response.config_options)
        return acp_id

    def _meta(self, root: Path) -> dict[str, Any]:
        """What the agent may read of ROOT's own configuration (`acp_workspace`)."""
        return session_meta(self.name, self.command, self.project_config_files, root,
                            self.project_trusted)

    def _mcp_entries(self) -> list[Any]:
        """The MCP servers to hand the agent; HTTP ones only if it says it speaks HTTP."""
        entries = self.mcp_servers() if self.mcp_servers is not None else []
        caps = self.agent_info.agent_capabilities if self.agent_info else None
        http = bool(caps and caps.mcp_capabilities and caps.mcp_capabilities.http)
        return [e for e in entries if http or getattr(e, "type", None) != "http"]

    def _note_modes(self, acp_id: str, state: SessionModeState | None, options: Any) -> None:
        modes = SessionModes.of(state)
        if modes is not None:
            self._client.modes[acp_id] = modes
        models = SessionModels.of(options)
        if models is not None:
            self._client.models[acp_id] = models

    async def _apply_mode(
        self, conn: ClientSideConnection, process: AgentProcess, acp_id: str, request: TurnRequest
    ) -> None:
        """The session's mode for tandem's permission mode and the user's choices."""
        await self._options.apply(conn, self._guarded(process), acp_id, request.read_only,
                                  request.permission_mode)

    def _guarded(self, process: AgentProcess) -> Callable[[Awaitable[Any]], Awaitable[Any]]:
        return lambda call: self._guard(call, process, STARTUP_TIMEOUT)

    async def _continue_session(
        self, conn: ClientSideConnection, process: AgentProcess, request: TurnRequest, acp_id: str
    ) -> SessionHow | None:
        """Reattach ACP_ID by resume or load, if offered; None when neither worked."""
        caps = self.agent_info.agent_capabilities if self.agent_info else None
        session_caps = caps.session_capabilities if caps else None
        meta = self._meta(request.root)
        attempts: list[tuple[SessionHow, Any]] = []
        if session_caps is not None and session_caps.resume is not None:
            attempts.append(
                ("resume", lambda: conn.resume_session(session_id=acp_id, cwd=str(request.root),
                                                       **meta))
            )
        if caps is not None and caps.load_session:
            attempts.append(
                (
                    "load",
                    lambda: conn.load_session(
                        session_id=acp_id, cwd=str(request.root),
                        mcp_servers=self._mcp_entries(), **meta,
                    ),
                )
            )
        for how, call in attempts:
            try:
                response = await self._guard(call(), process, STARTUP_TIMEOUT)
            except RequestError as exc:
                log.info("ACP %s of %s failed: %s", how, acp_id, error_text(exc))
                continue
            self._note_modes(acp_id, getattr(response, "modes", None),
                             getattr(response, "config_options", None))
            return how
        return None

    async def _open_root(
        self, conn: ClientSideConnection, process: AgentProcess, request: TurnRequest
    ) -> tuple[str, AcpSessionInfo | None]:
        """The root chat's ACP session id, and how it was just established (None:
        it was live already)."""
        async with self._root_lock:
            if self._root_id is not None:
                pending, self._root_pending = self._root_pending, None
                return self._root_id, pending
            how: SessionHow | None = None
            acp_id = self._resume_id
            if acp_id is not None:
                how = await self._continue_session(conn, process, request, acp_id)
            if how is None or acp_id is None:
                acp_id = await self._new_session(conn, process, request)
                how = "seeded" if has_history(request) else "new"
            self._root_id, self._resume_id = acp_id, None
            return acp_id, AcpSessionInfo(acp_session_id=acp_id, how=how)

    async def _root_session(
        self, conn: ClientSideConnection, process: AgentProcess, request: TurnRequest
    ) -> tuple[str, str]:
        """The root chat's ACP session id and the prompt text to send to it."""
        acp_id, info = await self._open_root(conn, process, request)
        if info is None:
            return acp_id, followup_prompt(request)
        if info.how in ("new", "seeded"):
            # Opened fresh (perhaps for `session_options`, before any prompt).
            info.how = "seeded" if has_history(request) else "new"
            text = first_prompt(request)
        else:
            text = followup_prompt(request)
        self.last_session = info
        return acp_id, text

    # -- modes and models ---------------------------------------------------

    async def session_options(self, root: Path) -> AcpOptions:
        """The modes and models the agent offers the root chat (opening its ACP
        session, without a prompt, when there is none yet)."""
        request = TurnRequest(session_id="options", turn=0, root=root,
                              messages=[Message(role="user", text="-")])
        try:
            conn, process = await self._ensure_started(request)
            acp_id, info = await self._open_root(conn, process, request)
        except (_StartError, _AgentDied, TimeoutError, RequestError, ConnectionError) as exc:
            if isinstance(exc, _AgentDied | TimeoutError | ConnectionError):
                await self._forget_dead_process()
            why = error_text(exc) if isinstance(exc, RequestError) else str(exc)
            raise TandemError("provider", f"ACP agent {self.name}: {why}") from None
        if info is not None:
            self._root_pending = info  # the first turn records it
        return self._options.report(acp_id)

    async def choose(self, kind: OptionKind, value: str, root: Path,
                     permission_mode: PermissionMode = "ask") -> AcpOptions:
        """Choose VALUE as the session's KIND (``mode`` or ``model``) and apply it
        to the root chat's ACP session now (later sessions get it when opened)."""
        await self.session_options(root)
        acp_id = self._root_id
        assert acp_id is not None
        self._options.check(acp_id, kind, value)
        self._options.choices[kind] = value
        if self._conn is not None and self._process is not None:
            await self._options.apply(self._conn, self._guarded(self._process), acp_id,
                                      False, permission_mode)
        return self._options.report(acp_id)

    async def _close_session(
        self, conn: ClientSideConnection, process: AgentProcess, acp_id: str
    ) -> bool:
        """Release a session's resources in the agent, when it can; True if closed."""
        caps = self.agent_info.agent_capabilities if self.agent_info else None
        if (
            caps is None
            or caps.session_capabilities is None
            or caps.session_capabilities.close is None
        ):
            return False
        try:
            await self._guard(conn.close_session(session_id=acp_id), process, 10.0)
        except Exception as exc:  # an agent failing to close costs nothing but memory
            log.info("ACP agent %s: closing session %s failed: %s", self.name, acp_id, exc)
            return False
        return True

    # -- turns -----------------------------------------------------------------

    async def cancel(self) -> None:
        """Cancel every turn in flight (same as cancelling the task running `run`)."""
        for turn in list(self._turns):
            turn.cancel()
        self._cancel_requested.set()

    def takes_images(self) -> bool:
        """Whether the running agent advertised ``promptCapabilities.image``."""
        caps = self.agent_info.agent_capabilities if self.agent_info else None
        prompt = caps.prompt_capabilities if caps is not None else None
        return bool(prompt is not None and prompt.image)

    async def image_refusal(self, root: Path) -> str | None:
        """None when the agent takes image prompts, else why not (it is started to know)."""
        try:
            await self._ensure_started(TurnRequest(session_id="", turn=0, root=root,
                                                   messages=[]))
        except (_StartError, _AgentDied, TimeoutError, RequestError, ConnectionError) as exc:
            return f"ACP agent {self.name} could not start to say whether it takes images: {exc}"
        if self.takes_images():
            return None
        return (f"ACP agent {self.name} does not take images (its initialize reply has no "
                "promptCapabilities.image): send the text alone")

    async def run(self, request: TurnRequest, sink: TurnSink) -> TurnResult:
        """Run one turn through the agent; always ends with a result, never hangs
        on a dead agent. Cancellation (of the calling task, or `cancel`) sends
        ``session/cancel`` and ends the turn as aborted."""
        if not request.isolated:
            self.last_session = None
        if not request.root.is_absolute() or not request.root.is_dir():
            raise TandemError(
                "invalid", f"workspace root {request.root} is not an existing absolute directory"
            )
        followup_prompt(request)  # validates the messages before anything starts
        self._cancel_requested.clear()
        try:
            conn, process = await self._ensure_started(request)
            if request.isolated:
                acp_id, text = (
                    await self._new_session(conn, process, request),
                    first_prompt(request),
                )
            else:
                acp_id, text = await self._root_session(conn, process, request)
            await self._apply_mode(conn, process, acp_id, request)
        except asyncio.CancelledError:
            _uncancel()
            return TurnResult(outcome="aborted", error="cancelled while the agent was starting")
        except (_StartError, _AgentDied, TimeoutError, RequestError, ConnectionError) as exc:
            if isinstance(exc, _AgentDied | TimeoutError | ConnectionError):
                await self._forget_dead_process()
            return TurnResult(
                outcome="failed",
                error=error_text(exc) if isinstance(exc, RequestError) else str(exc),
            )
        turn = AcpTurn(request, sink, self._edit_grants)
        self._client.turns[acp_id] = turn
        self._turns.add(turn)
        try:
            result = await self._prompt(conn, process, turn, acp_id, text)
        finally:
            self._client.turns.pop(acp_id, None)
            self._turns.discard(turn)
        try:
            turn.finish()
        except Exception as exc:
            log.exception("ACP turn: the sink failed at the end of the turn")
            result.outcome, result.error = "failed", f"could not record the turn: {exc}"
        if request.isolated:
            self._client.modes.pop(acp_id, None)
            if process.alive:
                await self._close_session(conn, process, acp_id)
        else:
            if result.outcome == "aborted" and process.alive and self._root_id == acp_id:
                await self._refresh_after_cancel(conn, process, acp_id)
            result.acp_session_id = self.root_session_id
        return result

    async def _refresh_after_cancel(
        self, conn: ClientSideConnection, process: AgentProcess, acp_id: str
    ) -> None:
        """Reattach the root chat's ACP session freshly after a cancelled turn.

        The Claude Code adapter answers the prompt after a cancelled one at once
        with the cancelled turn's stale stop (claude-agent-acp issue #551), so
        the session is closed and the next turn resumes it from the agent's
        transcript. Agents that cannot close sessions keep theirs.
        """
        async with self._root_lock:
            if self._root_id == acp_id and await self._close_session(conn, process, acp_id):
                self._root_id, self._resume_id = None, acp_id

    async def _prompt(
        self,
        conn: ClientSideConnection,
        process: AgentProcess,
        turn: AcpTurn,
        acp_id: str,
        text: str,
    ) -> TurnResult:
        blocks: list[Any] = [text_block(text)]
        # The current request's images; earlier ones are the agent's own history (or,
        # seeded, markers in the quoted transcript). Sent only to an agent that said it
        # takes them (the engine asked `image_refusal` first).
        if self.takes_images():
            blocks += [image_block(i.data, i.media_type) for i in turn.request.messages[-1].images
                       if i.data]
        prompt = asyncio.ensure_future(conn.prompt(session_id=acp_id, prompt=blocks))
        cancel_wait = asyncio.ensure_future(self._cancel_requested.wait())
        failed_wait = asyncio.ensure_future(turn.failed.wait())
        waits: set[asyncio.Future[Any]] = {prompt, process.exited, cancel_wait, failed_wait}
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            _uncancel()
            done = set()
        finally:
            cancel_wait.cancel()
            failed_wait.cancel()
        if prompt in done and not isinstance(_exception(prompt), ConnectionError):
            return self._result(turn, prompt)
        if prompt in done or process.exited in done:
            # The agent died (its output closed first, or its exit was seen first).
            prompt.cancel()
            if self._closed:
                return turn.result("aborted", "the agent was stopped: its session closed")
            report = await process.exit_report()
            await self._forget_dead_process()
            return turn.result("failed", report or "the agent closed its output; it was stopped")
        return await self._abort(conn, process, turn, acp_id, prompt)

    async def _abort(
        self,
        conn: ClientSideConnection,
        process: AgentProcess,
        turn: AcpTurn,
        acp_id: str,
        prompt: asyncio.Future[PromptResponse],
    ) -> TurnResult:
        turn.cancel()
        with contextlib.suppress(Exception):
            await conn.cancel(session_id=acp_id)
        ends: set[asyncio.Future[Any]] = {prompt, process.exited}
        with contextlib.suppress(BaseException):
            # A second cancel must not leave the turn without its result.
            await asyncio.wait(ends, timeout=CANCEL_GRACE, return_when=asyncio.FIRST_COMPLETED)
        if not prompt.done():
            # The agent ignored the cancel: stop waiting; its session is suspect.
            prompt.cancel()
            log.warning(
                "ACP agent %s did not end a cancelled prompt in %.0f s", self.name, CANCEL_GRACE
            )
        answered = prompt.done() and not prompt.cancelled() and prompt.exception() is None
        response = prompt.result() if answered else None
        if turn.failure is not None:
            return turn.result("failed", turn.failure, response)
        return turn.result("aborted", "cancelled", response)

    def _result(self, turn: AcpTurn, prompt: asyncio.Future[PromptResponse]) -> TurnResult:
        exc = prompt.exception()
        if turn.failure is not None:
            return turn.result("failed", turn.failure)
        if exc is not None:
            return turn.result("failed", error_text(exc))
        return turn.outcome_of(prompt.result())

    async def _forget_dead_process(self) -> None:
        """After the agent died: drop it (the root chat's id stays, for a resume)."""
        async with self._start_lock:
            await self._drop_process()
