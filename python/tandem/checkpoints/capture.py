"""Capture a workspace root into a git tree in the private repository.

The root is walked by git (``ls-files -m -o --exclude-standard`` against a
private index), so the user's ``.gitignore`` files apply exactly as git
applies them, ``.git`` entries are never listed, and the private index's
stat data means an unchanged file is neither read nor hashed. Only the paths
git reports as changed or new are looked at here: each is checked against
the size cap and for readability, and either fed to ``update-index`` or
recorded as a `Gap` (and kept out of the tree).

Nested repositories: git's walk stops at a directory holding a ``.git`` and
reports it as ``dir/``; adding it would store a gitlink (a commit id, not the
files), and fails outright when the nested repository has no commit yet.
Instead each nested repository is captured as its own *region* (work tree =
that directory, its own private index, its own ``.gitignore`` rules), and the
region trees are grafted into the root tree under their prefixes. So a nested
repository's files are captured as files.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from tandem.checkpoints.git import Git, GitError
from tandem.checkpoints.layout import Layout
from tandem.checkpoints.models import Gap

_UNREADABLE_DIR = re.compile(r"could not open directory '(.*)': ")


@dataclass
class Capture:
    """A captured state of the root: its tree and what it could not capture."""

    tree: str
    gaps: list[Gap] = field(default_factory=list)


@dataclass
class _Region:
    tree: str
    gaps: list[Gap]
    nested: list[str]


def capture(git: Git, layout: Layout, size_cap: int, excludes: list[str]) -> Capture:
    """Capture LAYOUT's root; EXCLUDES are extra root-anchored patterns (ours)."""
    trees: dict[str, str] = {}
    gaps: list[Gap] = []
    pending = [""]
    while pending:
        region = pending.pop()
        result = _capture_region(git, layout, region, size_cap, excludes if not region else [])
        trees[region] = result.tree
        gaps.extend(result.gaps)
        pending.extend(result.nested)
    gaps.sort(key=lambda g: g.path)
    if len(trees) == 1:
        return Capture(trees[""], gaps)
    return Capture(_graft(git, layout, trees), gaps)


def _capture_region(
    git: Git, layout: Layout, region: str, size_cap: int, excludes: list[str]
) -> _Region:
    work = layout.root / region if region else layout.root
    prefix = f"{region}/" if region else ""
    index = layout.index_for(region)
    args = ["ls-files", "-z", "-m", "-o", "--exclude-standard"]
    args += [f"--exclude={pattern}" for pattern in excludes]
    try:
        listing = git.run(args, work_tree=work, index=index)
    except GitError:
        # A damaged private index costs a full re-hash, never a failed turn.
        if not index.exists():
            raise
        index.unlink()
        listing = git.run(args, work_tree=work, index=index)

    gaps = [
        _dir_gap(work, prefix, match)
        for match in _UNREADABLE_DIR.findall(listing.stderr.decode("utf-8", "surrogateescape"))
    ]
    update: list[str] = []
    drop: list[str] = []
    nested: list[str] = []
    for raw in sorted(set(listing.stdout.split(b"\0"))):
        if not raw:
            continue
        rel = os.fsdecode(raw)
        if rel.endswith("/"):
            if os.path.lexists(work / rel / ".git"):
                nested.append(prefix + rel[:-1])
            continue
        gap = _check(work / rel, prefix + rel, size_cap)
        if gap is None:
            update.append(rel)
            continue
        drop.append(rel)
        if not any(g.covers(gap.path) for g in gaps):
            gaps.append(gap)

    if nested:
        # A directory that became a repository may still have entries here.
        inside = git.run(
            ["ls-files", "-z", "--"] + [n[len(prefix) :] + "/" for n in nested],
            work_tree=work,
            index=index,
        ).stdout
        drop += [os.fsdecode(p) for p in inside.split(b"\0") if p]
    if drop:
        git.run(
            ["update-index", "-z", "--force-remove", "--stdin"],
            work_tree=work,
            index=index,
            input=_nul_join(drop),
        )
    if update:
        git.run(
            ["update-index", "-z", "--add", "--remove", "--replace", "--stdin"],
            work_tree=work,
            index=index,
            input=_nul_join(update),
        )
    tree = git.out(["write-tree"], work_tree=work, index=index)
    return _Region(tree, gaps, nested)


def _check(full: Path, rel: str, size_cap: int) -> Gap | None:
    """None when git can capture FULL as it is (or it is gone); else the gap."""
    try:
        st = os.lstat(full)
    except (FileNotFoundError, NotADirectoryError):
        return None  # deleted: update-index --remove drops it
    except OSError:
        return Gap(path=rel, reason="unreadable")
    if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    if not stat.S_ISREG(st.st_mode):
        return Gap(path=rel, reason="unreadable", size=st.st_size, mtime_ns=st.st_mtime_ns)
    if st.st_size > size_cap:
        return Gap(path=rel, reason="too-large", size=st.st_size, mtime_ns=st.st_mtime_ns)
    try:
        # O_NONBLOCK: a path swapped for a FIFO since lstat must not hang us.
        fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return Gap(path=rel, reason="unreadable", size=st.st_size, mtime_ns=st.st_mtime_ns)
    os.close(fd)
    return None


def _dir_gap(work: Path, prefix: str, rel: str) -> Gap:
    rel = rel if rel.endswith("/") else rel + "/"
    try:
        st = os.lstat(work / rel)
        return Gap(path=prefix + rel, reason="unreadable", mtime_ns=st.st_mtime_ns)
    except OSError:
        return Gap(path=prefix + rel, reason="unreadable")


def _graft(git: Git, layout: Layout, trees: dict[str, str]) -> str:
    """One tree: the root region's, with each nested region's under its prefix."""
    index = layout.index_dir / f"graft-{os.getpid()}"
    try:
        git.run(["read-tree", trees[""]], index=index)
        for region in sorted(r for r in trees if r):
            git.run(["read-tree", f"--prefix={region}/", trees[region]], index=index)
        return git.out(["write-tree"], index=index)
    finally:
        try:
            index.unlink()
        except FileNotFoundError:
            pass


def _nul_join(paths: list[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)
