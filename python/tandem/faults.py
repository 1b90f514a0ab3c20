"""A test-only fault seam: named points where the backend stops itself or a write fails.

Unset (always, outside tests) every `point` call is one check of a module-level
bool and returns. ``TANDEM_FAULTS`` (read once, when this module is imported)
arms points for the soak harness (tests/soak, docs/reliability.md)::

    TANDEM_FAULTS="journal.write=enospc@3,restore.file=kill@1,journal.fsync=delay:0.2"

Each item is ``POINT=ACTION[@N]``: at the Nth time the process reaches POINT
(default the first) the ACTION happens once. ``kill`` ends the process at once
(``os._exit``, no clean-up, as ``kill -9`` would), ``enospc`` / ``eio`` raise
that `OSError` from the point, ``delay:SECONDS`` sleeps there (a slow disk).
Each firing is written (point and action) to ``TANDEM_FAULTS_LOG`` when set,
so the harness knows which one fired. Never set it for real use.
"""

from __future__ import annotations

import errno
import os
import time

POINTS = (
    "journal.write",         # an append, before its write(2)
    "journal.appended",      # an append, after its write(2), before anything else
    "journal.fsync",         # a journal's fsync, before it
    "journal.synced",        # a journal's fsync, after it
    "atomic.fsync",          # write_atomic: temp file written, before its fsync
    "atomic.rename",         # write_atomic: temp file fsynced, before the rename
    "atomic.renamed",        # write_atomic: renamed, before the folder's fsync
    "restore.file",          # a checkpoint restore: one temp copy fsynced, before its rename
    "rewind.restored",       # a rewind: files restored, before its journal entry
    "rewind.entry",          # a rewind: entry written, before its fsync and the intent's removal
    "undo.restored",         # an undo of a rewind: files back, before its journal entry
    "revert.restored",       # a review revert: file changed, before its journal entry
    "capture.mid",           # a checkpoint capture: index updated, before write-tree
    "carry.fetched",         # a checkpoint carry: refs fetched, before the move goes on
)
"""Every point the backend calls, with where it sits."""

_SPEC = os.environ.get("TANDEM_FAULTS", "")
ENABLED = bool(_SPEC)
"""Whether any point is armed; False outside tests, and then `point` does nothing."""

_plan: dict[str, tuple[str, int]] = {}
_hits: dict[str, int] = {}


def _parse(spec: str) -> dict[str, tuple[str, int]]:
    plan: dict[str, tuple[str, int]] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, _, action = item.partition("=")
        action, _, nth = action.partition("@")
        if name not in POINTS:
            raise ValueError(f"TANDEM_FAULTS: no fault point {name!r}")
        plan[name] = (action, int(nth or 1))
    return plan


if ENABLED:
    _plan = _parse(_SPEC)


def point(name: str) -> None:
    """Reach fault point NAME: nothing unless ``TANDEM_FAULTS`` armed it."""
    if not ENABLED:
        return
    _fire(name)


def _fire(name: str) -> None:
    armed = _plan.get(name)
    if armed is None:
        return
    _hits[name] = hits = _hits.get(name, 0) + 1
    action, nth = armed
    if hits != nth:
        return
    log = os.environ.get("TANDEM_FAULTS_LOG")
    if log:  # before acting: a kill leaves no other trace of which point fired
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{name} {action}\n")
    if action.startswith("delay:"):
        time.sleep(float(action[6:]))
    elif action == "kill":
        os._exit(137)
    elif action in ("enospc", "eio"):
        code = errno.ENOSPC if action == "enospc" else errno.EIO
        raise OSError(code, os.strerror(code))
    else:
        raise ValueError(f"TANDEM_FAULTS: unknown action {action!r} at {name}")
