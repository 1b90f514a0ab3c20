"""Protected paths: files whose change makes other programs run or reconfigures tandem.

A write to one (an agent's hook in ``.claude/``, ``.tandem/settings.json``, an
``.envrc``, a CI workflow, a git hook…) is always asked about, in every
permission mode, ``auto-edit`` included; a read-only turn refuses it. The list
is the ``protected_paths`` setting (`DEFAULT_PROTECTED_PATHS` when unset); the
git hooks folder the repository's ``core.hooksPath`` names is protected
whatever the list says.

An entry is a relative path of one or more components (``.claude/``,
``.github/workflows/``, ``.envrc``); a path is protected when a run of its
components matches the entry's, at any depth (a leading ``/`` anchors the
entry at the root), compared case-insensitively, with ``*`` and ``?`` inside a
component (`fnmatch`). Both the path as written and the path with every
symlink resolved are checked, so ``cfg -> .claude`` and ``.CLAUDE`` are caught,
as the ``.git`` rule does (`tandem.tools.paths.refuse_git`).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path, PurePath

from tandem import secrets
from tandem.config.model import DEFAULT_PROTECTED_PATHS
from tandem.tools.paths import inside

__all__ = ["DEFAULT_PROTECTED_PATHS", "hooks_dir", "matches", "protected_reason", "question"]

GIT_TIMEOUT = 5.0
"""Seconds the ``git config`` look-up may take; past it no hooks folder is known."""


def _parts(path: str) -> list[str]:
    return [p.casefold() for p in PurePath(path).parts if p not in ("/", ".")]


def matches(parts: Sequence[str], entry: str) -> bool:
    """Whether the components PARTS (case-folded, relative to the root) fall under ENTRY."""
    anchored = entry.startswith("/")
    want = _parts(entry)
    if not want:
        return False
    starts = [0] if anchored else range(len(parts) - len(want) + 1)
    return any(all(fnmatchcase(parts[i + k], w) for k, w in enumerate(want)) for i in starts)


def hooks_dir(root: Path) -> Path | None:
    """The real folder named by ``core.hooksPath`` for the repository holding ROOT, if any.

    Read with ``git config`` (the system, user and repository files, as git
    itself reads them); ``git config`` and ``git rev-parse`` run no program a
    repository names (no hook, no fsmonitor). A relative value is relative to
    the top of the work tree, where git runs hooks.
    """
    env = {k: v for k, v in secrets.child_env().items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(root), *args], env=env, capture_output=True,
                                 text=True, timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        value = out.stdout.strip()
        return value if out.returncode == 0 and value else None

    value = git("config", "--type=path", "--get", "core.hooksPath")
    if value is None:
        return None
    where = Path(value)
    if not where.is_absolute():
        top = git("rev-parse", "--show-toplevel")
        if top is None:
            return None
        where = Path(top) / where
    return Path(os.path.realpath(where))


def _relative(root: Path, real_root: Path, path: str) -> str | None:
    """PATH as written, relative to the root (the root's own components never count)."""
    given = PurePath(path)
    if not given.is_absolute():
        return path
    for base in (root, real_root):
        if given.is_relative_to(base):
            return str(given.relative_to(base))
    return None


def protected_reason(root: Path, path: str, real: Path,
                     entries: Sequence[str] = DEFAULT_PROTECTED_PATHS,
                     hooks: Path | None = None) -> str | None:
    """Why writing PATH (REAL once resolved inside ROOT) needs the user's word, or None.

    HOOKS is the repository's hooks folder (`hooks_dir`), when there is one.
    """
    real_root = Path(os.path.realpath(root))
    forms = [_parts(written)] if (written := _relative(root, real_root, path)) else []
    if inside(real_root, real):
        forms.append([p.casefold() for p in real.relative_to(real_root).parts])
    for entry in entries:
        if any(matches(parts, entry) for parts in forms):
            return f"{entry} is a protected path"
    if hooks is not None and (real == hooks or real.is_relative_to(hooks)):
        return "it is in the git hooks folder (core.hooksPath)"
    return None


def question(title: str, reason: str) -> str:
    """The title of the question asked before a protected write: TITLE and why."""
    return (f"{title} — {reason}: this write would change what runs or how tandem and "
            "other tools are configured")


def check(root: Path, path: str, real: Path, entries: Sequence[str]) -> str | None:
    """`protected_reason` with the repository's hooks folder looked up (runs ``git``)."""
    reason = protected_reason(root, path, real, entries)
    if reason is not None:
        return reason
    return protected_reason(root, path, real, (), hooks_dir(root))


def mentioned(command: str, entries: Sequence[str]) -> str | None:
    """Why the shell COMMAND's text names a protected path (None: it names none).

    A plain text search (``.claude/``, ``.envrc`` as words of the command, any
    case): it makes the question say why and keeps a session grant from
    skipping it. It is no sandbox: a command can reach the same files without
    naming them.
    """
    words = command.casefold().replace("'", " ").replace('"', " ").split()
    for entry in entries:
        want = "/".join(_parts(entry))
        if want and any(want in word.strip("/") for word in words):
            return f"{entry} is a protected path and the command names it"
    return None


def remote_reason(path: str, working_dir: str, entries: Sequence[str]) -> str | None:
    """Why a remote agent's edit of PATH (on its server, under WORKING_DIR) needs asking.

    The server's file system cannot be resolved from here, so the path is
    compared as written, relative to the working dir; one outside it is asked too.
    """
    given = PurePath(path)
    if given.is_absolute():
        if not given.is_relative_to(working_dir):
            return "it is outside the working dir"
        given = given.relative_to(working_dir)
    parts = _parts(str(given))
    if ".." in parts:
        return "it leaves the working dir"
    for entry in entries:
        if matches(parts, entry):
            return f"{entry} is a protected path"
    return None
