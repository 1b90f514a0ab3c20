"""The ``tandem`` command: ``serve`` for Emacs, and commands for terminals and scripts.

Heavy imports stay lazy (each subcommand imports its own module): ``tandem
serve`` must print its port before anything can warn, and ``tandem --help``
should be instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

# Light (the standard library and the state folder's helpers): every real
# process needs them before its command runs.
from tandem import __version__, reaper, secrets
from tandem.store.home import prepare_home, secure_home

# Domains that add sub-commands: each module has ``register(subparsers)`` and
# imports its handlers only when one runs (`tandem.lazy_command`).
DOMAIN_CLIS = ("tandem.sessions.cli", "tandem.config.cli")


def _serve(args: argparse.Namespace) -> int:
    from tandem.server.main import main as serve_main

    return serve_main(port=args.port, watch_stdin=not args.no_stdin_watch)


def _ask(args: argparse.Namespace) -> int:
    # A running backend of this state root takes the turn (a small process, start-up);
    # only without one is the turn's code imported here.
    from tandem.ask_client import through_backend

    status = through_backend(args)
    if status is not None:
        return status
    from tandem.ask import run_ask

    return run_ask(args)


def _doctor(args: argparse.Namespace) -> int:
    from tandem.doctor import run_cli

    return run_cli(json_output=args.json, fix=args.fix)


def build_parser(domains: bool = True) -> argparse.ArgumentParser:
    """Return the parser of every sub-command (only the core ones unless DOMAINS)."""
    parser = argparse.ArgumentParser(
        prog="tandem", description="Work with a coding agent on a project, from Emacs."
    )
    parser.add_argument("--version", action="version", version=f"tandem {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = sub.add_parser("serve", help="run the EPC backend (Emacs starts this)")
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any)")
    serve.add_argument(
        "--no-stdin-watch", action="store_true", help="keep running when stdin closes"
    )
    serve.set_defaults(func=_serve)
    doctor = sub.add_parser("doctor", help="say what tandem found and what is missing")
    doctor.add_argument("--json", action="store_true", help="print one JSON object")
    doctor.add_argument("--fix", action="store_true",
                        help="first make tandem's state private (0600 files, 0700 folders)")
    doctor.set_defaults(func=_doctor)
    ask = sub.add_parser("ask", help="run one chat turn without Emacs")
    ask.add_argument("prompt", help="what to ask")
    ask.add_argument("--cwd", help="project directory of a new session (default: here)")
    ask.add_argument("--session", help="continue this session (id or unique prefix)")
    ask.add_argument("--provider", help="FAMILY:MODEL (an API family `tandem doctor` lists) "
                     "or acp:AGENT")
    ask.add_argument("--permission-mode", choices=["ask", "auto-edit", "read-only"])
    ask.add_argument("--json", action="store_true", help="end with one JSON line")
    ask.set_defaults(func=_ask)
    for name in DOMAIN_CLIS if domains else ():
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):
                continue  # that domain has no commands yet
            raise
        module.register(sub)
    return parser


def _tighten(home: Path) -> None:
    try:
        prepare_home(home)
    except OSError:
        pass  # `tandem doctor` names what stays loose


def _start_process() -> None:
    """What a real ``tandem`` process does before anything else.

    Secrets leave the initial environment (a re-exec when the shell exported
    some: `tandem.secrets.bootstrap`), and the state is made private (except
    for ``doctor``, which reports loose modes instead of fixing them).
    """
    secrets.bootstrap()
    if sys.argv[1:2] not in (["doctor"], ["--help"], ["-h"], ["--version"], []):
        try:
            home = secure_home()
        except OSError:
            return  # an unusable home is reported by the command itself
        # The walk below the (now 0700) home must not delay the start.
        threading.Thread(target=_tighten, args=(home,), daemon=True,
                         name="tandem-private-modes").start()
        if sys.argv[1:2] != ["serve"]:  # serve sweeps itself, into its log
            reaper.sweep_stale(home)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ARGV (None: this process's own command line); return the exit status."""
    if argv is None:
        _start_process()
    argv = list(sys.argv[1:] if argv is None else argv)
    # `serve` must not import domain code before its log is set up.
    parser = build_parser(domains=argv[:1] != ["serve"])
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # a read-only or full TANDEM_HOME: one sentence, no traceback
        from tandem.store.oserrors import describe

        doing = f"cannot use {exc.filename}" if exc.filename else "a file operation failed"
        print(f"tandem: {describe(exc, doing)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
