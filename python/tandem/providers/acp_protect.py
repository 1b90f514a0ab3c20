"""Which of an ACP agent's writes need the user's own word: protected paths, and paths
outside the workspace root.

An agent reports the files a call touches (its ``locations`` and the path keys
of its input). A call that names a protected path (`tandem.tools.protected`) or
a path outside the root is asked about in every permission mode, ``auto-edit``
included, with a once-only question that says why; the same rule decides the
agent's ``fs/write_text_file`` requests (`acp_fs`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import anyio.to_thread

from tandem.tools.paths import inside
from tandem.tools.protected import check

OUTSIDE = "it is outside the workspace root"


def _reason(root: Path, paths: Sequence[str], entries: Sequence[str]) -> tuple[str | None,
                                                                               set[Path]]:
    real_root = Path(os.path.realpath(root))
    first: str | None = None
    found: set[Path] = set()
    for raw in paths:
        if not raw or "\x00" in raw:
            continue
        candidate = Path(raw) if Path(raw).is_absolute() else real_root / raw
        real = Path(os.path.realpath(candidate))
        reason = check(real_root, raw, real, entries) if inside(real_root, real) else OUTSIDE
        if reason is not None:
            first = first or reason
            found.add(real)
    return first, found


async def reason_for(root: Path, paths: Iterable[str],
                     entries: Sequence[str]) -> tuple[str | None, set[Path]]:
    """Why writing PATHS (as an agent gave them, relative to ROOT or absolute) needs asking
    (None: it does not), and the resolved paths that do. Runs ``git`` and resolves symlinks
    in a worker thread."""
    listed = sorted(set(paths))
    if not listed:
        return None, set()
    return await anyio.to_thread.run_sync(_reason, root, listed, entries)
