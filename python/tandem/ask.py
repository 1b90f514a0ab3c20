"""``tandem ask``: one chat turn without Emacs.

The answer streams to stdout; with ``--json`` one JSON line ends the output
(``session``, ``turn``, ``outcome``, ``files_changed``). Exit 0 on success, 1 on
failure, 130 on interrupt. In ``ask`` mode a permission question is put to
the terminal; with no terminal it is rejected, and stderr says so.

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
from tandem.paths import tandem_home
from tandem.protocol.base import TandemError
from tandem.protocol.errors import shell_text
from tandem.protocol.events import AnyEvent, Event
from tandem.providers.base import PermissionAnswer, PermissionRequest
from tandem.turns.engine import TurnSpec

EXIT_INTERRUPT = 130


class StdoutSink:
    """Events of a headless turn: text deltas to stdout, nothing else."""

    def __init__(self, show: bool = True) -> None:
        self.show = show

    def publish(self, session: str, event: AnyEvent) -> None:
        """Print streamed answer text as it comes."""
        if self.show and not isinstance(event, Event) and event["stream"] == "text":
            sys.stdout.write(event["text"])
            sys.stdout.flush()


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
        sys.stderr.write(f"tandem: no terminal to ask; rejected {request.tool}: "
                         f"{request.title}\n")
        return "reject"
    reader, writer = tty
    with reader, writer:
        always = "" if request.once_only else " / [a]lways this session"
        writer.write(f"\nAllow {request.tool}: {request.title}? [y]es once{always} / [N]o: "
                     .encode())
        line = await asyncio.to_thread(reader.readline)
    return _choice(line)


async def _ask(args: argparse.Namespace) -> int:
    app = App(home=tandem_home(), events=StdoutSink(show=True))
    sessions, engine = app.sessions, app.turns.engine
    cwd = os.path.abspath(args.cwd or os.getcwd())
    if args.session:
        journal = sessions.manager.resume_id(args.session, cwd, confirm=None).journal
    else:
        journal = sessions.manager.new(cwd).journal
    resolved = sessions.resolved(sessions.root_of(journal))
    for warning in resolved.warnings:
        sys.stderr.write(f"tandem: {warning}\n")
    settings = resolved.plain()
    spec = TurnSpec(session=journal.id, text=args.prompt,
                    provider=sessions.provider_for(settings, args.provider),
                    permission_mode=sessions.permission_mode(settings, args.permission_mode))
    turn = await engine.accept(spec, asker=ask_on_terminal)
    try:
        ended = await engine.wait(journal.id, turn)
    except asyncio.CancelledError:
        engine.cancel(journal.id)
        ended = await engine.wait(journal.id, turn)
    finally:
        await app.turns.aclose()
    sys.stdout.write("\n")
    if ended.error:
        sys.stderr.write(f"tandem: turn {turn} {ended.outcome}: {ended.error}\n")
    if args.json:
        sys.stdout.write(json.dumps({"session": journal.id, "turn": turn,
                                     "outcome": ended.outcome,
                                     "files_changed": ended.files_changed}) + "\n")
    sessions.close()
    return {"succeeded": 0, "failed": 1}.get(ended.outcome, EXIT_INTERRUPT)


def run_ask(args: argparse.Namespace) -> int:
    """Entry point of ``tandem ask``."""
    try:
        return asyncio.run(_ask(args))
    except TandemError as e:
        sys.stderr.write(f"tandem: {shell_text(e)}\n")
        return 1
    except KeyboardInterrupt:
        return EXIT_INTERRUPT
