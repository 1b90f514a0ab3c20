"""What the private-state tests look at: the entries group or others may use."""

from __future__ import annotations

import stat
from pathlib import Path


def loose(root: Path) -> list[str]:
    """Every entry under ROOT (ROOT included, symlinks aside) that group or others may use,
    as ``MODE relative/path``."""
    out = []
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        if not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077:
            out.append(f"{stat.S_IMODE(st.st_mode):04o} {path.relative_to(root)}")
    return out
