"""Which refs keep checkpoints reachable in the private repository.

Each checkpoint is a parentless commit kept by a ref of its own,
``refs/tandem/cp/<owner>/<id>``: the owner is the session that took it
(``_`` when none did), so the checkpoints of a deleted session, or those a
retention setting lets go, are dropped by deleting their refs, and their
objects become unreachable for ``git gc`` to prune. (Chaining each
checkpoint to the previous one, as stores before this layout did under
``refs/tandem/chain``, would keep every one reachable from the newest.)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime

from tandem.checkpoints.git import Git
from tandem.protocol.base import TandemError

CP_REFS = "refs/tandem/cp/"
"""The namespace of per-checkpoint refs."""
LEGACY_CHAIN = "refs/tandem/chain"
"""The one ref of stores before per-checkpoint refs (their checkpoints are kept)."""
NO_OWNER = "_"
"""The owner part of a checkpoint no session took (restore backups, other tools)."""
_OWNER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def check_owner(owner: str | None) -> str:
    """OWNER as a ref component (``_`` for None); ``invalid`` for anything else."""
    if owner is None:
        return NO_OWNER
    if not isinstance(owner, str) or not _OWNER.match(owner) or ".." in owner or owner.endswith(
        (".", ".lock")
    ):
        raise TandemError("invalid", f"checkpoint owner must be a session id: {owner!r}")
    return owner


def ref_of(owner: str, commit: str) -> str:
    """The ref that keeps COMMIT of OWNER."""
    return f"{CP_REFS}{owner}/{commit}"


@dataclass(frozen=True)
class KeptRef:
    """One checkpoint as the refs list it (without reading its tree)."""

    ref: str
    commit: str
    owner: str
    created: float
    """When it was taken (the record's time), seconds since the epoch."""
    turn: int | None


def kept(git: Git) -> list[KeptRef]:
    """Every per-checkpoint ref, newest first (one ``for-each-ref``)."""
    fmt = "%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents:subject)"
    out = git.run(["for-each-ref", f"--format={fmt}", CP_REFS]).stdout.decode(
        "utf-8", "replace"
    )
    refs = []
    for line in out.splitlines():
        parts = line.split("\0")
        if len(parts) != 4:
            continue
        name, commit, when, subject = parts
        owner = name[len(CP_REFS) :].split("/", 1)[0]
        created, turn = _record(subject, float(when or 0))
        refs.append(KeptRef(name, commit, owner, created, turn))
    # The record's time, not the commit's: that has one-second resolution.
    return sorted(refs, key=lambda r: r.created, reverse=True)


def _record(subject: str, fallback: float) -> tuple[float, int | None]:
    """The creation time and turn of a checkpoint's JSON record."""
    try:
        record = json.loads(subject)
        turn = record.get("turn")
        created = datetime.fromisoformat(record["created"]).timestamp()
    except (ValueError, AttributeError, KeyError, TypeError):
        return fallback, None
    return created, turn if isinstance(turn, int) else None


def delete(git: Git, refs: list[KeptRef]) -> None:
    """Delete REFS in one transaction (each only if it still names its commit)."""
    if refs:
        lines = "".join(f"delete {r.ref} {r.commit}\n" for r in refs)
        git.run(["update-ref", "--stdin"], input=lines.encode())
