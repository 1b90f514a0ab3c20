"""Helpers for checkpoint tests: tree states, the user's git, writing files."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

State = dict[str, tuple[object, ...]]

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "User",
    "GIT_AUTHOR_EMAIL": "user@example.org",
    "GIT_COMMITTER_NAME": "User",
    "GIT_COMMITTER_EMAIL": "user@example.org",
}


def tree_state(root: Path) -> State:
    """Every entry under ROOT (``.git`` included): kind, bytes or target, mode."""
    out: State = {}
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in dirnames + filenames:
            full = base / name
            rel = full.relative_to(root).as_posix()
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("file", full.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def git(cwd: Path, *args: str) -> str:
    """Run the user's git in CWD (no GIT_* from our environment leaks in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_GIT_ENV)
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout


def write(root: Path, rel: str, data: str | bytes, mode: int | None = None) -> Path:
    """Write DATA at ROOT/REL, creating parents; chmod to MODE when given."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    if mode is not None:
        path.chmod(mode)
    return path


def write_varied_tree(root: Path) -> None:
    """Forty files in nested folders and the awkward ones: quoted, backslashed,
    newline and non-ASCII names, an executable, an empty file, a symbolic link."""
    for i in range(40):
        write(root, f"pkg{i % 4}/sub{i % 3}/f{i}.py", f"x = {i}\n" * (i + 1))
    write(root, "odd/new\nline.txt", "newline in the name\n")
    write(root, 'odd/"quoted".txt', "quote first\n")
    write(root, "odd/back\\slash \"and\" space.txt", "both\n")
    write(root, "odd/é accent.txt", "non-ascii\n")
    write(root, "bin/run.sh", "#!/bin/sh\n", mode=0o755)
    write(root, "empty.txt", "")
    os.symlink("pkg0/sub0/f0.py", root / "link.py")
