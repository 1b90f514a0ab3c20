"""``tandem ask``: one chat turn without Emacs.

The answer streams to stdout; with ``--json`` one JSON line ends the output
(``session``, ``turn``, ``outcome``, ``files_changed``, ``refused``). The exit
status (`EXIT_*`): 0 the turn succeeded, 1 it failed (or never started), 3 it
succeeded but a tool call was refused, 130 it was interrupted. In ``ask`` mode
a permission question is put to the terminal; with no terminal it is
rejected, and stderr says so. Every message starts on a line of its own, even
in the middle of a streamed answer. A run that fails before its turn starts
leaves no session behind.

Its arguments are declared in `tandem.cli`, which imports this module only
when ``ask`` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import sys

from tandem.app import App
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


class _Lines:
    """Where stdout stands, so that a message never glues itself to streamed text."""

    at_line_start = True

    @classmethod
    def text(cls, text: str) -> None:
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
            cls.at_line_start = text.endswith("\n")

    @classmethod
    def say(cls, message: str) -> None:
        """MESSAGE on stderr, on a line of its own."""
        if not cls.at_line_start:
            cls.text("\n")
        sys.stderr.write(f"tandem: {message}\n")
        sys.stderr.flush()


class StdoutSink:
    """Events of a headless turn: text deltas to stdout; refused tool calls counted."""

    def __init__(self, show: bool = True) -> None:
        self.show = show
        self.refused = 0

    def publish(self, session: str, event: AnyEvent) -> None:
        """Print streamed answer text as it comes."""
        if isinstance(event, EntryEvent):
            entry = event.entry
            if entry.get("type") == "tool_result" and entry.get("status") == "refused":
                self.refused += 1
        elif self.show and not isinstance(event, Event) and event["stream"] == "text":
            _Lines.text(event["text"])


def _terminal() -> tuple[io.FileIO, io.FileIO] | None:
    """Open the controlling terminal as (reader, writer), or None when there is none.

    Two unbuffered byte streams: a text stream opened ``r+`` on ``/dev/tty``
    fails ("not seekable"), which read as "no terminal" and rejected every call.
    """
    try:
        reader = open("/dev/tty", "rb", buffering=0)  # noqa: SIM115 - closed by caller
    except OSError:
        return None
    try:
        writer = open("/dev/tty", "wb", buffering=0)  # noqa: SIM115 - closed by caller
    except OSError:
        reader.close()
        return None
    return reader, writer


def _choice(line: bytes) -> PermissionAnswer:
    """The answer a typed LINE means; empty (or anything else) is the default, no."""
    choice = line.decode("utf-8", "replace").strip().lower()[:1]
    return "allow_once" if choice == "y" else "allow_session" if choice == "a" else "reject"


async def ask_on_terminal(request: PermissionRequest, interaction: str) -> PermissionAnswer:
    """Ask about a tool call on the controlling terminal; reject when there is none."""
    tty = _terminal() if sys.stdin.isatty() or os.environ.get("TANDEM_FORCE_TTY") else None
    if tty is None:
        _Lines.say(f"no terminal to ask; rejected {request.tool}: {request.title}")
        return "reject"
    reader, writer = tty
    if not _Lines.at_line_start:
        _Lines.text("\n")
    with reader, writer:
        always = "" if request.once_only else " / [a]lways this session"
        writer.write(f"Allow {request.tool}: {request.title}? [y]es once{always} / [N]o: "
                     .encode())
        line = await asyncio.to_thread(reader.readline)
    return _choice(line)


async def _ask(args: argparse.Namespace) -> int:
    sink = StdoutSink(show=True)
    app = App(home=tandem_home(), events=sink)
    sessions, engine = app.sessions, app.turns.engine
    cwd = os.path.abspath(args.cwd or os.getcwd())
    fresh = not args.session
    if args.session:
        journal = sessions.manager.resume_id(args.session, cwd, confirm=None).journal
    else:
        journal = sessions.manager.new(cwd).journal
    try:
        resolved = sessions.resolved(sessions.root_of(journal))
        for warning in resolved.warnings:
            _Lines.say(warning)
        settings = resolved.plain()
        found = project_instructions(sessions.root_of(journal),
                                     *resolved.settings.instruction_files())
        spec = TurnSpec(session=journal.id, text=args.prompt,
                        provider=sessions.provider_for(settings, args.provider),
                        permission_mode=sessions.permission_mode(settings,
                                                                 args.permission_mode),
                        instructions=instructions_text(found),
                        context=[i.record() for i in found])
        turn = await engine.accept(spec, asker=ask_on_terminal)
    except BaseException:
        # Nothing happened in it: a session made for this run goes with it.
        await app.turns.aclose()
        sessions.close()
        if fresh:
            discard_if_empty(journal.path)
        raise
    try:
        ended = await engine.wait(journal.id, turn)
    except asyncio.CancelledError:
        engine.cancel(journal.id)
        ended = await engine.wait(journal.id, turn)
    finally:
        await app.turns.aclose()
    if not _Lines.at_line_start:
        _Lines.text("\n")
    if ended.error:
        _Lines.say(f"turn {turn} {ended.outcome}: {ended.error}")
    if sink.refused and ended.outcome == "succeeded":
        _Lines.say(f"{sink.refused} tool call{'s were' if sink.refused > 1 else ' was'} "
                   f"refused (exit status {EXIT_REFUSED})")
    if args.json:
        _Lines.text(json.dumps({"session": journal.id, "turn": turn,
                                "outcome": ended.outcome,
                                "files_changed": ended.files_changed,
                                "refused": sink.refused}) + "\n")
    sessions.close()
    if ended.outcome == "succeeded":
        return EXIT_REFUSED if sink.refused else EXIT_SUCCEEDED
    return EXIT_FAILED if ended.outcome == "failed" else EXIT_INTERRUPT


def run_ask(args: argparse.Namespace) -> int:
    """Entry point of ``tandem ask``."""
    try:
        return asyncio.run(_ask(args))
    except TandemError as e:
        _Lines.say(shell_text(e))
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPT
