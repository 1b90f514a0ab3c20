"""A parallel session's tree on an agent-server host: made and removed through its shell.

The host's project is the main remote session's working dir ROOT (its
target's resolved working dir, fixed when it was attached). The tree's path
is computed here from ROOT and the session's NAME only (`tree_path`:
``<ROOT>.tandem-worktrees/NAME``, beside the project as locally), never
taken from what the server or the workspace says. NAME must be one path
and branch component (`check_name`); ROOT an absolute POSIX path without
control characters or ``..``.

`make` runs one script in ROOT (``POST /api/bash/execute_bash_command``,
every argument `shlex.quote`d): it claims DIR with ``mkdir`` (an existing
one, or a creation of the same name at once, is ``exists``); when ROOT is
the top of a git work tree, ``git worktree add -b tandem/NAME DIR <HEAD's
commit>`` (hooks off; an existing ``tandem/NAME`` branch is ``exists``, never
taken over), else ``cp -a`` of ROOT. A second call then reads back, in DIR, its physical path,
``git rev-parse --show-toplevel``, the branch HEAD names and the commit;
an answer that names another path, branch or commit refuses the creation
(``remote-invalid``) and removes what the first call made, by the computed
path and branch. `remove` deletes that worktree and ``tandem/NAME`` only
(``git worktree remove --force``, ``git branch -D``), or the copy's folder.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal, Protocol

from tandem.parallel.trees import BRANCH_PREFIX, check_name
from tandem.protocol.base import TandemError

FOLDER_SUFFIX = ".tandem-worktrees"
_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
MARK = "TANDEM-"
"""Every line the scripts print for tandem starts with it (the rest of the output is git's)."""


class Shell(Protocol):
    """What `make` and `remove` need of a client: the server's bash API."""

    async def execute_bash(self, command: str, cwd: str, timeout: int = 120) -> tuple[int, str]:
        """Run COMMAND in CWD on the host: (exit code, output)."""
        ...


def check_root(root: object) -> str:
    """ROOT (without trailing ``/``) when it is an absolute POSIX path tandem can name."""
    if (not isinstance(root, str) or not root.startswith("/") or "\\" in root
            or any(ord(c) < 32 or c == "\x7f" for c in root)
            or any(p in (".", "..") for p in root.split("/"))):
        raise TandemError("unsupported", f"The remote project {root!r} is not an absolute "
                          "POSIX path: parallel sessions on a host need one")
    stripped = root.rstrip("/")
    if not stripped:
        raise TandemError("invalid", "The remote project is the host's root folder: parallel "
                          "sessions need a folder to go beside")
    return stripped


def tree_path(root: str, name: str) -> str:
    """Where parallel session NAME of the host project ROOT goes: ``ROOT.tandem-worktrees/NAME``."""
    return f"{check_root(root)}{FOLDER_SUFFIX}/{check_name(name)}"


@dataclass
class HostTree:
    """A tree made on the host: its path, kind, branch and base commit."""

    path: str
    kind: Literal["worktree", "copy"]
    branch: str | None
    base_commit: str | None


def _marks(output: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in output.splitlines():
        if line.startswith(MARK):
            key, _, value = line[len(MARK):].partition(" ")
            out.setdefault(key, value)
    return out


def _make_script(root: str, dest: str, branch: str) -> str:
    # ``mkdir`` (not ``-p``) claims DEST: of two creations of one name, one wins, and the
    # loser's cleanup never touches the winner's tree. What fails here is undone here.
    q = shlex.quote
    git = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false"
    return "\n".join([
        f"root={q(root)}; dest={q(dest)}; branch={q(branch)}",
        'here=$(cd -- "$root" && pwd -P) || { echo TANDEM-NOROOT; exit 0; }',
        f'top=$({git} -C "$root" rev-parse --show-toplevel 2>/dev/null) || top=""',
        'if [ -n "$top" ]; then top=$(cd -- "$top" && pwd -P) || top=""; fi',
        'mkdir -p -- "$(dirname -- "$dest")" || exit 4',
        'mkdir -- "$dest" 2>/dev/null || { echo TANDEM-EXISTS; exit 0; }',
        'if [ -n "$top" ] && [ "$top" = "$here" ]; then',
        f'  head=$({git} -C "$root" rev-parse --verify --quiet "HEAD^{{commit}}") '
        '|| { rmdir -- "$dest"; echo TANDEM-NOHEAD; exit 0; }',
        f'  if {git} -C "$root" show-ref --verify --quiet "refs/heads/$branch"; then '
        'rmdir -- "$dest"; echo TANDEM-BRANCH; exit 0; fi',
        f'  {git} -C "$root" worktree add -q -b "$branch" "$dest" "$head" 1>&2 '
        '|| { rmdir -- "$dest" 2>/dev/null; exit 5; }',
        '  echo "TANDEM-KIND worktree"; echo "TANDEM-BASE $head"',
        'else',
        '  cp -a -- "$root/." "$dest/" || { rm -rf -- "$dest"; exit 6; }',
        '  echo "TANDEM-KIND copy"',
        'fi',
    ]) + "\n"


def _check_script(dest: str) -> str:
    q = shlex.quote(dest)
    git = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false"
    return "\n".join([
        f'cd -- {q} || exit 3',
        'printf "TANDEM-PWD %s\\n" "$(pwd -P)"',
        f'printf "TANDEM-TOP %s\\n" "$({git} rev-parse --show-toplevel 2>/dev/null)"',
        f'printf "TANDEM-REF %s\\n" "$({git} symbolic-ref -q HEAD 2>/dev/null)"',
        f'printf "TANDEM-HEAD %s\\n" "$({git} rev-parse --verify --quiet HEAD 2>/dev/null)"',
    ]) + "\n"


async def make(shell: Shell, root: str, name: str, host: str) -> HostTree:
    """Make parallel session NAME's tree beside the host project ROOT (see the module doc)."""
    root = check_root(root)
    dest = tree_path(root, name)
    branch = BRANCH_PREFIX + name
    code, output = await shell.execute_bash(_make_script(root, dest, branch), root)
    marks = _marks(output)
    if "EXISTS" in marks:
        raise TandemError("exists", f"{host}:{dest} exists already: choose another name")
    if "NOROOT" in marks:
        raise TandemError("not-found", f"The remote project {host}:{root} is not there")
    if "NOHEAD" in marks:
        raise TandemError("invalid", f"The repository of {host}:{root} has no commit yet: "
                          "commit once, then start a parallel session")
    if "BRANCH" in marks:
        raise TandemError("exists", f"The branch {branch} exists already in {host}:{root}: "
                          "choose another name (tandem never takes over a branch)")
    kind = marks.get("KIND")
    if code != 0 or kind not in ("worktree", "copy"):
        # The script undid its own half (git's failed add leaves no worktree).
        raise TandemError("remote-failed", f"Making the parallel tree {host}:{dest} failed "
                          f"(exit {code}): {output.strip()[-500:]}")
    made = HostTree(dest, "worktree" if kind == "worktree" else "copy",
                    branch if kind == "worktree" else None, marks.get("BASE"))
    try:
        await _verify(shell, made, host)
    except BaseException:
        await _cleanup(shell, root, dest, made.branch)
        raise
    return made


async def _verify(shell: Shell, made: HostTree, host: str) -> None:
    """Read back what is at MADE.path; refuse an answer that names anything else."""
    code, output = await shell.execute_bash(_check_script(made.path), made.path)
    marks = _marks(output)
    physical = marks.get("PWD", "")

    def refuse(what: str) -> TandemError:
        return TandemError("remote-invalid", f"The host {host} answered that the parallel "
                           f"tree {made.path} {what}; nothing was kept")

    if code != 0 or not physical.startswith("/") or physical.rstrip("/").rpartition("/")[2] != (
            made.path.rpartition("/")[2]):
        raise refuse(f"is {physical or 'not there'!r}")
    if made.kind == "copy":
        return
    if marks.get("TOP", "") != physical:
        raise refuse(f"is the work tree {marks.get('TOP', '')!r}")
    if marks.get("REF", "") != f"refs/heads/{made.branch}":
        raise refuse(f"is on {marks.get('REF', '') or 'no branch'!r}, not {made.branch}")
    if not made.base_commit or not _COMMIT.match(made.base_commit) or (
            marks.get("HEAD") != made.base_commit):
        raise refuse(f"is at commit {marks.get('HEAD', '')!r}, not {made.base_commit!r}")


def _remove_script(root: str, dest: str, branch: str | None) -> str:
    q = shlex.quote
    git = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false"
    if branch is None:
        return f"rm -rf -- {q(dest)}\n"
    return "\n".join([
        f"root={q(root)}; dest={q(dest)}; branch={q(branch)}",
        f'if [ -e "$dest" ]; then {git} -C "$root" worktree remove --force --force "$dest" '
        '|| exit 5; else',
        # Removed by hand: drop its administrative folder only (a prune would drop every
        # stale one, the user's too).
        f'  common=$(cd -- "$root" && cd -- "$({git} rev-parse --git-common-dir)" && pwd -P) '
        '|| exit 7',
        '  for g in "$common"/worktrees/*/gitdir; do',
        '    if [ -f "$g" ] && [ "$(cat -- "$g")" = "$dest/.git" ]; then '
        'rm -rf -- "$(dirname -- "$g")"; fi',
        '  done',
        'fi',
        f'if {git} -C "$root" show-ref --verify --quiet "refs/heads/$branch"; then '
        f'{git} -C "$root" branch -D "$branch" 1>&2 || exit 6; fi',
        'echo TANDEM-REMOVED',
    ]) + "\n"


async def _cleanup(shell: Shell, root: str, dest: str, branch: str | None) -> None:
    try:
        await shell.execute_bash(_remove_script(root, dest, branch), root)
    except TandemError:
        pass  # the creation's own error says what happened; the tree is named there


async def remove(shell: Shell, root: str, name: str, path: str,
                 kind: Literal["worktree", "copy"], branch: str | None, host: str) -> None:
    """Remove parallel session NAME's tree PATH (and BRANCH) beside the host project ROOT.

    PATH and BRANCH come from the record; both must be what `tree_path` and
    NAME make, so nothing else is ever removed."""
    root = check_root(root)
    dest = tree_path(root, name)
    if path != dest:
        raise TandemError("invalid", f"The record names {path}, not {dest}: not removed")
    if kind == "worktree" and branch != BRANCH_PREFIX + name:
        raise TandemError("invalid", f"tandem removes only {BRANCH_PREFIX}{name}, not {branch}")
    code, output = await shell.execute_bash(
        _remove_script(root, dest, branch if kind == "worktree" else None), root)
    if code != 0 or (kind == "worktree" and "REMOVED" not in _marks(output)):
        raise TandemError("remote-failed", f"Removing the parallel tree {host}:{dest} failed "
                          f"(exit {code}): {output.strip()[-500:]}")
