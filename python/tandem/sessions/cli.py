"""Terminal commands: ``tandem sessions list|new``, ``tandem resume``, ``tandem continue``.

The lead's ``tandem.cli`` calls `register`; ``python -m tandem.sessions.cli``
runs these commands alone. Only the arguments are declared here: the
handlers (`tandem.sessions.commands`) load when one of them runs, so building
the parser (``tandem --help``, ``tandem ask``) imports no session code.
The relocation question and the picker read the terminal (stdin must be a
TTY); without one the ID path exits 1 with an instruction to run
interactively. ``--json`` prints exactly one object: id, path, cwd,
active_cwd, relocated, previous_files.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from tandem.lazy_command import lazy

_COMMANDS = "tandem.sessions.commands"


def register(subparsers: Any) -> None:
    """Add this domain's commands to the ``tandem`` SUBPARSERS."""
    sessions = subparsers.add_parser("sessions", help="list or create session journals")
    sub = sessions.add_subparsers(dest="sessions_command", metavar="ACTION")
    ls = sub.add_parser("list", help="list sessions (this project; --all for every one)")
    ls.add_argument("--all", action="store_true", help="every project, not just this one")
    ls.add_argument("--json", action="store_true", help="print a JSON array")
    ls.set_defaults(func=lazy(_COMMANDS, "cmd_list"))
    new = sub.add_parser("new", help="create an empty session")
    new.add_argument("--cwd", default=None, help="its directory (default: the current one)")
    new.add_argument("--title", default="", help="its title")
    new.add_argument("--json", action="store_true", help="print one JSON object")
    new.set_defaults(func=lazy(_COMMANDS, "cmd_new"))
    sessions.set_defaults(func=lambda a: _usage(sessions))

    resume = subparsers.add_parser(
        "resume", help="resume a session by id/prefix or journal path (picker without one)"
    )
    resume.add_argument("target", nargs="?", help="session id, unique id prefix, or PATH.jsonl")
    resume.add_argument("--json", action="store_true", help="print one JSON object")
    resume.set_defaults(func=lazy(_COMMANDS, "cmd_resume"))

    cont = subparsers.add_parser("continue", help="continue the latest session here")
    cont.add_argument("--json", action="store_true", help="print one JSON object")
    cont.set_defaults(func=lazy(_COMMANDS, "cmd_continue"))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run only this domain's commands (``python -m tandem.sessions.cli``)."""
    parser = argparse.ArgumentParser(prog="tandem")
    register(parser.add_subparsers(dest="command", metavar="COMMAND"))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
