"""The client half of ACP: the callbacks an agent makes into tandem.

Session updates and permission questions go to the turn they belong to; the
file system (`acp_fs`) and terminal (`acp_terminal`) requests are answered
here, under the rules of the turn in flight in that ACP session (its root,
its read-only ceiling, its permission mode). A request outside a turn is
refused, except on a terminal already created (a background command).
"""

from __future__ import annotations

import logging
from typing import Any

from acp import RequestError
from acp.schema import (
    ConfigOptionUpdate,
    CreateTerminalResponse,
    CurrentModeUpdate,
    DeniedOutcome,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from tandem.editor import EditorBridge, NoEditor
from tandem.providers import acp_fs
from tandem.providers.acp_modes import SessionModels, SessionModes
from tandem.providers.acp_terminal import Terminal, TerminalRefused, Terminals
from tandem.providers.acp_turn import AcpTurn

log = logging.getLogger(__name__)

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
"""JSON-RPC error codes of a refused request."""


def refused(code: int, sentence: str, **data: Any) -> RequestError:
    """A refusal whose JSON-RPC message is tandem's SENTENCE, repeated in its data.

    Agents commonly show only the error's message (the SDK's own helpers put a
    generic "Invalid params" there), so the reason goes in the message itself.
    """
    return RequestError(code, sentence, {"message": sentence, **data})


class AcpClient:
    """The ACP client side: routes agent callbacks to the turn they belong to.

    EDITOR answers file reads and writes from the user's buffers (`NoEditor`:
    disk only).
    """

    def __init__(self, editor: EditorBridge | None = None) -> None:
        self.turns: dict[str, AcpTurn] = {}
        self.modes: dict[str, SessionModes] = {}
        """Mode state of each session that has modes, kept current from updates."""
        self.models: dict[str, SessionModels] = {}
        """Model choices of each session whose agent offers them, kept current."""
        self.editor: EditorBridge = editor or NoEditor()
        self.terminals = Terminals()
        self._terminal_calls: dict[str, tuple[AcpTurn, str]] = {}
        """Terminal id → the turn and tool row it was asked for (see `AcpTurn.allow_terminal`)."""

    def _turn(self, session_id: str, what: str) -> AcpTurn:
        turn = self.turns.get(session_id)
        if turn is None:
            raise refused(INVALID_REQUEST, f"{what}: no turn is running")
        turn.terminal_text = self.terminal_text
        return turn

    def terminal_text(self, terminal_id: str) -> str | None:
        """What a terminal of ours shows in its tool row (None: not ours)."""
        try:
            terminal = self.terminals.get(terminal_id)
        except TerminalRefused:
            return None
        return _shown(terminal)

    # -- fs/* --------------------------------------------------------------

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        """``fs/read_text_file``: the visiting buffer's text, else the file's (see acp_fs)."""
        turn = self._turn(session_id, "fs/read_text_file")
        try:
            text = await acp_fs.read_text_file(
                self.editor, turn.request.root, path, line, limit)
        except acp_fs.FsRefused as exc:
            raise refused(INVALID_PARAMS, str(exc), path=path) from None
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        """``fs/write_text_file``: through the visiting buffer, else to disk (see acp_fs)."""
        turn = self._turn(session_id, "fs/write_text_file")
        try:
            await acp_fs.write_text_file(
                self.editor, turn.request.root, path, content, read_only=turn.read_only,
                protected=turn.request.protected_paths, ask=turn.allow_protected_write)
        except acp_fs.FsRefused as exc:
            raise refused(INVALID_PARAMS, str(exc), path=path) from None
        return WriteTextFileResponse()

    # -- terminal/* ------------------------------------------------------------

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None,
        env: list[EnvVariable] | None = None, cwd: str | None = None,
        output_byte_limit: int | None = None, **kwargs: Any,
    ) -> CreateTerminalResponse:
        """``terminal/create``: run COMMAND under the native shell tool's rules."""
        turn = self._turn(session_id, "terminal/create")
        line = " ".join([command, *(args or [])])
        try:
            call_id = await turn.allow_terminal(line)
        except PermissionError as exc:
            raise refused(INVALID_REQUEST, str(exc)) from None
        try:
            terminal = await self.terminals.create(
                turn.request.root, command, args, [(e.name, e.value) for e in env or []],
                cwd, output_byte_limit)
        except TerminalRefused as exc:
            if call_id is not None:
                turn.terminal_done(call_id, "failed", str(exc))
            raise refused(INVALID_PARAMS, str(exc)) from None
        if call_id is not None:
            self._terminal_calls[terminal.id] = (turn, call_id)
        return CreateTerminalResponse(terminal_id=terminal.id)

    def _terminal(self, terminal_id: str) -> Terminal:
        try:
            return self.terminals.get(terminal_id)
        except TerminalRefused as exc:
            raise refused(INVALID_PARAMS, str(exc)) from None

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        """``terminal/output``: the output so far (the newest, up to the limit)."""
        terminal = self._terminal(terminal_id)
        text, truncated = terminal.output()
        return TerminalOutputResponse(
            output=text, truncated=truncated, exit_status=_exit_status(terminal))

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        """``terminal/wait_for_exit``: wait until the command ends (or its time is up)."""
        terminal = self._terminal(terminal_id)
        status = await terminal.wait()
        self._report_end(terminal)
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        """``terminal/kill``: kill the command's process group; the output stays."""
        self._terminal(terminal_id).kill()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        """``terminal/release``: kill what still runs and forget the terminal."""
        terminal = self._terminal(terminal_id)
        await self.terminals.release(terminal_id)
        self._report_end(terminal)
        return ReleaseTerminalResponse()

    def _report_end(self, terminal: Terminal) -> None:
        asked = self._terminal_calls.pop(terminal.id, None)
        if asked is not None:
            turn, call_id = asked
            status = terminal.status()
            ok = status is not None and status.exit_code == 0
            turn.terminal_done(call_id, "completed" if ok else "failed", _shown(terminal))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """``session/update``: report UPDATE to its turn (ignored outside a turn)."""
        if isinstance(update, CurrentModeUpdate) and session_id in self.modes:
            self.modes[session_id].current = update.current_mode_id
        if isinstance(update, ConfigOptionUpdate):
            models = SessionModels.of(update.config_options)
            if models is not None:
                self.models[session_id] = models
        turn = self.turns.get(session_id)
        if turn is not None and turn.failure is None:
            try:
                turn.on_update(update)
            except Exception as exc:
                # The sink could not record it: end the turn rather than lose entries.
                log.exception("ACP turn: the sink failed")
                turn.fail(f"could not record the agent's output: {error_text(exc)}")

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        """``session/request_permission``: answered by the turn's policy or its user."""
        turn = self.turns.get(session_id)
        if turn is None:
            # No turn to ask for: nobody can answer, so nothing is allowed.
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        try:
            return await turn.on_permission(tool_call, options)
        except Exception as exc:
            log.exception("ACP turn: asking permission failed")
            turn.fail(f"could not ask for permission: {error_text(exc)}")
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Extension requests: none is supported."""
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications: ignored."""
        return None


def _exit_status(terminal: Terminal) -> TerminalExitStatus | None:
    status = terminal.status()
    if status is None:
        return None
    return TerminalExitStatus(exit_code=status.exit_code, signal=status.signal)


def _shown(terminal: Terminal) -> str:
    """A terminal's output as a tool row shows it, with the native shell's notes."""
    text, truncated = terminal.output()
    notes = []
    if truncated:
        notes.append(f"[output truncated: only the last {terminal.limit} bytes kept]")
    if terminal.timed_out:
        notes.append(f"[command killed after its {terminal.timeout_s:g} s timeout]")
    status = terminal.status()
    if status is not None:
        notes.append(f"[exit code {status.exit_code}]" if status.exit_code is not None
                     else f"[killed by {status.signal}]")
    return "\n".join([text.rstrip("\n"), *notes]).strip()


def error_text(exc: BaseException) -> str:
    """A readable message for EXC, with an ACP error's details."""
    if isinstance(exc, RequestError):
        data = exc.data
        detail = ""
        if isinstance(data, dict):
            detail = str(data.get("details") or data.get("message") or "")
        elif data:
            detail = str(data)
        return f"{exc}" + (f": {detail}" if detail and detail not in str(exc) else "")
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
