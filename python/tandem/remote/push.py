"""Put a Rewind's files back on the agent-server: uploads, deletes, execute bits.

After a Rewind restored the mirror (`tandem.remote.mirror`), `push` makes the
server's working dir match it for the paths the restore touched: restored
files are uploaded (``POST /api/file/upload``), deleted ones removed and
execute bits set through one shell command each
(``POST /api/bash/execute_bash_command``; 1.58.2 has no delete endpoint).

Confinement: every path is relative, without ``..`` or control characters,
and is quoted with `shlex.quote`. On the server, the shell resolves each
path's parent folder and touches the path only when that folder is the
working dir or below it (a link the agent made cannot send a delete or an
upload outside); a link standing where a file is restored is removed
first, so the upload does not write through it.

Crash safety: the paths still to push are written to ``push.json`` in the
mirror's folder before any file of the mirror moves (Rewind writes it with
its intent) and rewritten as they go; what is
left there (a failure, a crash) is pushed again by `push_pending` before
the session's next sync, so the next turn never pulls the un-rewound
server state back over the rewound mirror.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from pydantic import BaseModel, Field

from tandem.protocol.base import TandemError
from tandem.remote.client import AgentServerClient
from tandem.remote.mirror import Mirror
from tandem.store import fsutil


class PushState(BaseModel):
    """The PATHS of WORKING_DIR still to be made equal to the mirror (``push.json``).

    A path the mirror has is uploaded, one it lacks is deleted: decided when
    the push runs, so a restore that rolled back pushes nothing harmful (the
    server gets what it already had).
    """

    working_dir: str
    paths: list[str] = Field(default_factory=list)


class PushResult(BaseModel):
    """What a push did on the server, and what it could not (with the server's words)."""

    uploaded: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    """Paths not put back on the server (kept in ``push.json`` for the next try)."""
    errors: list[str] = Field(default_factory=list)


def _check_rel(rel: str) -> str:
    if (not rel or rel.startswith("/") or "\\" in rel
            or any(p in ("", ".", "..") for p in rel.split("/"))
            or any(ord(c) < 32 or c == "\x7f" for c in rel)):
        raise TandemError("invalid", f"not a workspace path: {rel!r}")
    return rel


def state_file(mirror: Mirror) -> Path:
    """Where MIRROR's pending push is recorded."""
    return mirror.base / "push.json"


def save_pending(mirror: Mirror, state: PushState) -> None:
    """Record STATE as MIRROR's pending push (atomic); an empty one removes the record."""
    path = state_file(mirror)
    if not state.paths:
        path.unlink(missing_ok=True)
        return
    fsutil.atomic_write(path, state.model_dump_json().encode())


def load_pending(mirror: Mirror) -> PushState | None:
    """The push a failure or a crash left, or None."""
    try:
        return PushState.model_validate_json(state_file(mirror).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as e:
        raise TandemError("corrupt", f"{state_file(mirror)} is damaged ({e}); the rewound "
                          "files named there were not all put back on the server") from e


def _script(working_dir: str, delete: list[str], unlink_links: list[str]) -> str:
    """A POSIX shell script: confined deletes, then links removed where uploads go.

    It prints ``OUTSIDE i`` / ``FAILED i`` for the i-th path of DELETE +
    UNLINK_LINKS it did not handle.
    """
    lines = ["root=$(realpath -e -- " + shlex.quote(working_dir) + ") || exit 3",
             'check() { d=$(realpath -m -- "$(dirname -- "$1")"); '
             'case "$d/" in "$root"/*) return 0;; *) return 1;; esac; }']
    for i, rel in enumerate(delete):
        p = shlex.quote(f"{working_dir}/{rel}")
        lines.append(f'if check {p}; then rm -f -- "$d/$(basename -- {p})" || echo "FAILED {i}"; '
                     f'else echo "OUTSIDE {i}"; fi')
    for j, rel in enumerate(unlink_links, start=len(delete)):
        p = shlex.quote(f"{working_dir}/{rel}")
        lines.append(f'if check {p}; then f="$d/$(basename -- {p})"; '
                     f'if [ -L "$f" ]; then rm -f -- "$f" || echo "FAILED {j}"; fi; '
                     f'else echo "OUTSIDE {j}"; fi')
    return "\n".join(lines) + "\n"


def _flagged(output: str, count: int) -> dict[int, str]:
    out: dict[int, str] = {}
    for line in output.splitlines():
        what, _, num = line.strip().partition(" ")
        if what in ("OUTSIDE", "FAILED") and num.isdigit() and int(num) < count:
            out[int(num)] = what
    return out


async def push(mirror: Mirror, client: AgentServerClient, state: PushState) -> PushResult:
    """Make STATE's paths on the server equal to MIRROR; record what is left in ``push.json``."""
    wd = state.working_dir.rstrip("/")
    if not wd.startswith("/"):
        raise TandemError("invalid", f"Rewind on the server needs a POSIX working dir: {wd!r}")
    paths = sorted({_check_rel(r) for r in state.paths})
    save_pending(mirror, PushState(working_dir=wd, paths=paths))
    result = PushResult()
    if not paths:
        return result
    upload = [r for r in paths if (mirror.root / r).is_file()]
    delete = [r for r in paths if r not in set(upload)]
    code, output = await client.execute_bash(_script(wd, delete, upload), wd)
    if code != 0:
        result.errors.append(f"the server's shell answered {code}: {output.strip()[:300]}")
        result.failed = paths
        return result
    order = delete + upload
    flags = _flagged(output, len(order))
    for i, what in sorted(flags.items()):
        why = "its folder is outside the working dir" if what == "OUTSIDE" else "rm failed"
        result.errors.append(f"{order[i]}: {why}")
    left = {order[i] for i in flags}
    result.deleted = [r for r in delete if r not in left]
    todo = [r for r in upload if r not in left]
    save_pending(mirror, PushState(working_dir=wd, paths=sorted(left | set(todo))))
    executable: list[str] = []
    for n, rel in enumerate(todo):
        local = mirror.root / rel
        try:
            await client.upload(local, f"{wd}/{rel}")
        except TandemError as e:
            result.errors.append(e.message)
            left.add(rel)
        else:
            result.uploaded.append(rel)
            if local.stat().st_mode & 0o100:
                executable.append(rel)
        save_pending(mirror, PushState(working_dir=wd, paths=sorted(left | set(todo[n + 1:]))))
    if executable:
        cmd = "chmod +x -- " + " ".join(shlex.quote(f"{wd}/{r}") for r in executable)
        code, output = await client.execute_bash(cmd, wd)
        if code != 0:
            result.errors.append(f"chmod +x failed ({code}): {output.strip()[:300]}")
    result.failed = sorted(left)
    return result


async def push_pending(mirror: Mirror, client: AgentServerClient) -> PushResult | None:
    """Push what an earlier Rewind left unpushed, if anything; None when nothing was left."""
    state = load_pending(mirror)
    if state is None:
        return None
    return await push(mirror, client, state)
