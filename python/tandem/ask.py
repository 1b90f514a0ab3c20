"""``tandem ask``: one chat turn without Emacs.

The answer streams to stdout; with ``--json`` one JSON line ends the output
(``session``, ``turn``, ``outcome``, ``files_changed``, ``refused``). The exit
status (`EXIT_*`): 0 the turn succeeded, 1 it failed (or never started), 3 it
succeeded but a tool call was refused, 130 it was interrupted. In ``ask`` mode
a permission question is put to the terminal; with no terminal it is
rejected, and stderr says so. Every message starts on a line of its own, even
in the middle of a streamed answer. A run that fails before its turn starts
leaves no session behind.

Its arguments are declared in `tandem.cli`; `tandem.ask_client` first offers
the turn to a running backend, which runs it with `run_turn` and sends the
output back, and imports this module only when there is none.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from tandem.app import App
from tandem.ask_client import may_ask, prompt
from tandem.config.agent_files import instructions_text, project_instructions
from tandem.paths import tandem_home
from tandem.protocol.base import TandemError
from tandem.protocol.errors import shell_text
from tandem.protocol.events import AnyEvent, EntryEvent, Event
from tandem.providers.base import PermissionAnswer, PermissionRequest
from tandem.store.journal import discard_if_empty
from tandem.turns.engine import TurnSpec

EXIT_SUCCEEDED = 0
EXIT_FAILED = 1
EXIT_REFUSED = 3
"""The turn succeeded, but at least one tool call was refused (by the user or the mode)."""
EXIT_INTERRUPT = 130

class Lines:
    """Where an output stands, so that a message never glues itself to streamed text."""

    def __init__(self, out: Callable[[str], None], err: Callable[[str], None]) -> None:
        self.out = out
        """Writes (and flushes) streamed text: stdout, or a socket's ``out`` line."""
        self.err = err
        """Writes (and flushes) a message: stderr, or a socket's ``err`` line."""
        self.at_line_start = True

    def text(self, text: str) -> None:
        """TEXT on the output."""
        if text:
            self.out(text)
            self.at_line_start = text.endswith("\n")

    def say(self, message: str) -> None:
        """MESSAGE on the error output, on a line of its own."""
        if not self.at_line_start:
            self.text("\n")
        self.err(f"tandem: {message}\n")


def _write(stream: object) -> Callable[[str], None]:
    def write(text: str) -> None:
        target = getattr(sys, str(stream))  # looked up each time: tests replace them
        target.write(text)
        target.flush()
    return write


STDIO = Lines(_write("stdout"), _write("stderr"))
"""This process's own output."""


class StdoutSink:
    """Events of a headless turn: text deltas to its output; refused tool calls counted."""

    def __init__(self, show: bool = True, lines: Lines = STDIO) -> None:
        self.show = show
        self.lines = lines
        self.refused = 0

    def publish(self, session: str, event: AnyEvent) -> None:
        """Print streamed answer text as it comes."""
        if isinstance(event, EntryEvent):
            entry = event.entry
            if entry.get("type") == "tool_result" and entry.get("status") == "refused":
                self.refused += 1
        elif self.show and not isinstance(event, Event) and event["stream"] == "text":
            self.lines.text(event["text"])


Asker = Callable[[PermissionRequest, str], Awaitable[PermissionAnswer]]


async def ask_on_terminal(request: PermissionRequest, interaction: str) -> PermissionAnswer:
    """Ask about a tool call on the controlling terminal; reject when there is none."""
    return await asker_through(STDIO, may_ask(), _on_this_terminal)(request, interaction)


async def _on_this_terminal(request: PermissionRequest) -> PermissionAnswer | None:
    return await asyncio.to_thread(prompt, request.tool, request.title, request.once_only)


def asker_through(lines: Lines, tty: bool,
              put: Callable[[PermissionRequest], Awaitable[PermissionAnswer | None]]) -> Asker:
    """An asker: with TTY each question goes through PUT (None: no terminal), else it is
    rejected; LINES says so."""

    async def ask(request: PermissionRequest, interaction: str) -> PermissionAnswer:
        answer = None
        if tty:
            if not lines.at_line_start:
                lines.text("\n")
            answer = await put(request)
        if answer is None:
            lines.say(f"no terminal to ask; rejected {request.tool}: {request.title}")
            return "reject"
        return answer
    return ask


@dataclass
class AskRequest:
    """One ``tandem ask``: its arguments as the command line (or the socket) gave them."""

    prompt: str
    cwd: str
    session: str | None = None
    provider: str | None = None
    permission_mode: str | None = None
    json: bool = False


async def run_turn(app: App, req: AskRequest, lines: Lines, asker: Asker,
                   watch: Callable[[str], AbstractContextManager[StdoutSink]],
                   own: bool) -> int:
    """Run REQ's turn in APP, writing through LINES; return the exit status.

    WATCH gives the sink that sees the session's events while the turn runs.
    OWN: APP belongs to this run (in-process), so its turns and journals are
    closed after it; a backend's App stays as it is, its current session too.
    """
    sessions, engine = app.sessions, app.turns.engine
    fresh = not req.session
    current = sessions.manager.current
    if req.session:
        journal = sessions.manager.resume_id(req.session, req.cwd, confirm=None).journal
    else:
        journal = sessions.manager.new(req.cwd).journal
    if not own and current is not None and sessions.manager.current is not current:
        # Emacs's current session, and the settings read for its directory, are not
        # ours to move (no await since the switch: nothing ran in between).
        sessions.manager.settings.reload_for_cwd(current.active_cwd)
    if not own:
        sessions.manager.current = current
    with watch(journal.id) as sink:
        try:
            resolved = sessions.resolved(sessions.root_of(journal))
            for warning in resolved.warnings:
                lines.say(warning)
            settings = resolved.plain()
            found = project_instructions(sessions.root_of(journal),
                                         *resolved.settings.instruction_files())
            spec = TurnSpec(session=journal.id, text=req.prompt,
                            provider=sessions.provider_for(settings, req.provider),
                            permission_mode=sessions.permission_mode(settings,
                                                                     req.permission_mode),
                            instructions=instructions_text(found),
                            context=[i.record() for i in found])
            turn = await engine.accept(spec, asker=asker)
        except BaseException:
            # Nothing happened in it: a session made for this run goes with it.
            if own:
                await app.turns.aclose()
                sessions.close()
            if fresh:
                if not own:
                    sessions.close(journal.id)
                discard_if_empty(journal.path)
            raise
        try:
            ended = await engine.wait(journal.id, turn)
        except asyncio.CancelledError:
            engine.cancel(journal.id)
            ended = await engine.wait(journal.id, turn)
        finally:
            if own:
                await app.turns.aclose()
    if not lines.at_line_start:
        lines.text("\n")
    if ended.error:
        lines.say(f"turn {turn} {ended.outcome}: {ended.error}")
    if sink.refused and ended.outcome == "succeeded":
        lines.say(f"{sink.refused} tool call{'s were' if sink.refused > 1 else ' was'} "
                  f"refused (exit status {EXIT_REFUSED})")
    if req.json:
        lines.text(json.dumps({"session": journal.id, "turn": turn,
                               "outcome": ended.outcome,
                               "files_changed": ended.files_changed,
                               "refused": sink.refused}) + "\n")
    if own:
        sessions.close()
    if ended.outcome == "succeeded":
        return EXIT_REFUSED if sink.refused else EXIT_SUCCEEDED
    return EXIT_FAILED if ended.outcome == "failed" else EXIT_INTERRUPT


async def _ask(args: argparse.Namespace) -> int:
    sink = StdoutSink(show=True)
    app = App(home=tandem_home(), events=sink)
    req = AskRequest(prompt=args.prompt, cwd=request_cwd(args.cwd), session=args.session,
                     provider=args.provider, permission_mode=args.permission_mode,
                     json=bool(args.json))
    return await run_turn(app, req, STDIO, ask_on_terminal, lambda _sid: nullcontext(sink),
                          own=True)


def request_cwd(cwd: str | None) -> str:
    """The project directory of a new session: CWD, else here, made absolute."""
    return os.path.abspath(cwd or os.getcwd())


def run_ask(args: argparse.Namespace) -> int:
    """Entry point of ``tandem ask`` in this process."""
    try:
        return asyncio.run(_ask(args))
    except TandemError as e:
        STDIO.say(shell_text(e))
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPT
