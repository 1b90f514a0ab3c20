"""The handlers of ``tandem sessions list|new``, ``tandem resume``, ``tandem continue``.

Their arguments are declared in `tandem.sessions.cli`, which imports this
module only when one of them runs. The relocation question and the picker read the
terminal (stdin must be a TTY); without one the ID path exits 1 with an
instruction to run interactively. ``--json`` prints exactly one object:
id, path, cwd, active_cwd, relocated, previous_files.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from tandem.paths import tandem_home
from tandem.protocol.base import TandemError
from tandem.protocol.errors import shell_text
from tandem.sessions.manager import Active, ResumeCancelled, SessionManager, parse_answer
from tandem.store.listing import SessionSummary

JSON_KEYS = ("id", "path", "cwd", "active_cwd", "relocated", "previous_files")
PICKER_CANCELLED = "Resume cancelled: no session selected."


def _manager() -> SessionManager:
    return SessionManager(tandem_home(), breadcrumb_key="cli")


def _launch_cwd() -> str:
    return os.getcwd()


def _has_terminal() -> bool:
    return sys.stdin.isatty()


def _ask(question: str) -> str:
    """Write QUESTION on stderr (stdout stays clean for --json) and read one line."""
    sys.stderr.write(question)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def _confirm(question: str) -> bool:
    try:
        return parse_answer(_ask(question))
    except EOFError:
        return False


def _report(active: Active, as_json: bool) -> int:
    info = active.describe()
    for notice in info["notices"]:
        print(f"tandem: {notice}", file=sys.stderr)
    if as_json:
        plain: dict[str, object] = dict(info)
        print(json.dumps({k: plain[k] for k in JSON_KEYS}))
        return 0
    print(f"Session {info['id']}" + (f" — {info['title']}" if info["title"] else ""))
    print(f"  journal:          {info['path']}")
    print(f"  recorded cwd:     {info['cwd']}")
    print(f"  active directory: {info['active_cwd']}")
    if info["relocated"]:
        print("  re-rooted into the current directory")
    return 0


def _fail(err: TandemError) -> int:
    print(f"tandem: {shell_text(err)}", file=sys.stderr)
    return 1


def _run(args: argparse.Namespace, action: Any) -> int:
    manager = _manager()
    try:
        return int(action(manager))
    except ResumeCancelled as cancelled:
        print(cancelled.message)
        return 0
    except TandemError as err:
        return _fail(err)
    finally:
        manager.close()


def cmd_list(args: argparse.Namespace) -> int:
    """``tandem sessions list [--all] [--json]``."""

    def act(m: SessionManager) -> int:
        rows = m.list(None if args.all else _launch_cwd())
        if args.json:
            print(json.dumps([r.model_dump() for r in rows]))
            return 0
        if not rows:
            print("No sessions." if args.all else "No sessions in this directory (try --all).")
        for r in rows:
            print(_row(r))
        return 0

    return _run(args, act)


def _row(r: SessionSummary) -> str:
    if r.damaged:
        return f"{r.id[:13]}  {r.created[:19]}  {'(' + r.damaged + ')':40}  {r.path}"
    gone = "" if r.cwd_exists else "  (directory gone)"
    title = r.title or "(untitled)"
    return f"{r.id[:13]}  {r.last_activity[:19]}  {title[:40]:40}  {r.cwd}{gone}"


def cmd_new(args: argparse.Namespace) -> int:
    """``tandem sessions new [--cwd DIR] [--title T] [--json]``."""
    return _run(args, lambda m: _report(m.new(args.cwd or _launch_cwd(), args.title), args.json))


def cmd_resume(args: argparse.Namespace) -> int:
    """``tandem resume [ID|PATH.jsonl] [--json]``."""
    target: str | None = args.target

    def act(m: SessionManager) -> int:
        launch = _launch_cwd()
        if target is None:
            return _pick(m, launch, args.json)
        if target.endswith(".jsonl") or os.sep in target:
            return _report(m.open_file(target, launch), args.json)
        confirm = _confirm if _has_terminal() else None
        return _report(m.resume_id(target, launch, confirm), args.json)

    return _run(args, act)


def _pick(m: SessionManager, launch: str, as_json: bool) -> int:
    """The terminal picker: this project's sessions first, then the others."""
    if not _has_terminal():
        return _fail(
            TandemError(
                "needs-terminal",
                "Choosing a session needs a terminal. Run `tandem resume` interactively, "
                "or give an id or a journal path.",
            )
        )
    local = m.list(launch)
    seen = {r.id for r in local}
    rows = local + [r for r in m.list(None) if r.id not in seen]
    if not rows:
        return _fail(TandemError("not-found", "No sessions to resume."))
    shown = rows[:50]
    for n, r in enumerate(shown, 1):
        print(f"{n:3}  {_row(r)}", file=sys.stderr)
    try:
        answer = _ask(f"Resume which session? [1-{len(shown)}, empty to cancel] ").strip()
    except EOFError:
        answer = ""
    if not answer:
        print(PICKER_CANCELLED)
        return 0
    if not answer.isdigit() or not 1 <= int(answer) <= len(shown):
        return _fail(TandemError("invalid", f"Not a number between 1 and {len(shown)}: {answer}"))
    return _report(m.open_file(shown[int(answer) - 1].path, launch), as_json)


def cmd_continue(args: argparse.Namespace) -> int:
    """``tandem continue [--json]``."""
    return _run(args, lambda m: _report(m.continue_recent(_launch_cwd()), args.json))
