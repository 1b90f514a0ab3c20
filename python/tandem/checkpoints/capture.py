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

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from tandem import faults
from tandem.checkpoints import bulk
from tandem.checkpoints.git import Git, GitError
from tandem.checkpoints.layout import Layout
from tandem.protocol.checkpoints import Gap
from tandem.store import fsutil

_UNREADABLE_DIR = re.compile(r"could not open directory '(.*)': ")

SPLIT_INDEX = ["-c", "core.splitIndex=true"]
"""For the calls that write a region's private index: only the changed entries
are written (into the region's index file), the rest stays in a shared index
file in the private repository (``sharedindex.*``, rewritten when a fifth of the
entries changed). At 100k files ``update-index`` and ``write-tree`` rewrote
the whole 7 MB index each: 90 ms of CPU a capture, 30 ms split. Per call,
not in the repository's config: a scratch index (`reverting`) stays whole, so
it leaves no shared file behind. A missing shared file (git expires unused
ones after two weeks) is a damaged index: that region is hashed again."""

ONE_LISTING_INDEX_BYTES = 256 * 1024
"""Below this private index size (~2,500 files) one ``ls-files`` lists changed and new
files together; above it two processes list them at once, on two cores."""


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


@dataclass
class IgnoreWatch:
    """What decides when tracked files must be re-checked against the ignore rules.

    Files captured once stay in the private index, and git applies ignore
    rules only to untracked files; so when the rules may have grown, the
    region's tracked files are listed against them (``ls-files -c -i``) and
    the newly ignored ones leave the capture. That costs a pass over the
    index (and a git process), so it runs only when needed: on a region's
    first capture into this store, when a ``.gitignore`` changed, or when an
    excludes file outside the tree (``core.excludesFile``, the repository's
    ``info/exclude``) changed. What the last check saw is kept in STATE (a
    file of the store) so that a new process — each ``tandem ask`` — does
    not check again; a missing or unreadable STATE means "check".
    """

    files: list[Path]
    state: Path | None = None
    seen: dict[str, tuple[tuple[int, int, int], ...]] = field(default_factory=dict)
    trees: dict[str, tuple[tuple[int, int, int] | None, str]] = field(default_factory=dict)
    """Per region: the index file's (inode, size, mtime) and the tree written from it."""
    nested: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per region: the nested repositories its last capture found (their entries gone)."""
    graft: tuple[tuple[tuple[str, str], ...], str] | None = None
    """The region trees last grafted into one, and the tree that made (`_graft`)."""

    def checked(self, region: str) -> tuple[tuple[int, int, int], ...] | None:
        """The fingerprint REGION's tracked files were last checked with, if known."""
        if region not in self.seen and self.state is not None:
            self.seen.update(_read_state(self.state))
        return self.seen.get(region)

    def mark(self, region: str, fingerprint: tuple[tuple[int, int, int], ...]) -> None:
        """REGION's capture succeeded with FINGERPRINT (kept in STATE when it changed)."""
        if self.seen.get(region) == fingerprint:
            return
        self.seen[region] = fingerprint
        if self.state is not None:
            data = {k: [list(t) for t in v] for k, v in self.seen.items()}
            fsutil.atomic_write(self.state, json.dumps(data).encode())

    def fingerprint(self) -> tuple[tuple[int, int, int], ...]:
        """(inode, size, mtime) of each excludes file; zeros when absent."""
        out = []
        for path in self.files:
            try:
                st = os.stat(path)
                out.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                out.append((0, 0, 0))
        return tuple(out)


def capture(
    git: Git, layout: Layout, size_cap: int, excludes: list[str], watch: IgnoreWatch
) -> Capture:
    """Capture LAYOUT's root; EXCLUDES are extra root-anchored patterns (ours)."""
    trees: dict[str, str] = {}
    gaps: list[Gap] = []
    pending = [""]
    while pending:
        region = pending.pop()
        rules = ["--exclude-standard"]
        if not region:
            rules += [f"--exclude={pattern}" for pattern in excludes]
        # The region's own repository's info/exclude applies as it would in git.
        info = layout.root / region / ".git" / "info" / "exclude"
        if info.is_file():
            rules.append(f"--exclude-from={info}")
        result = _capture_region(git, layout, region, size_cap, rules, watch)
        trees[region] = result.tree
        gaps.extend(result.gaps)
        pending.extend(result.nested)
    gaps.sort(key=lambda g: g.path)
    if len(trees) == 1:
        return Capture(trees[""], gaps)
    return Capture(_graft(git, trees, watch), gaps)


def _capture_region(
    git: Git, layout: Layout, region: str, size_cap: int, rules: list[str], watch: IgnoreWatch
) -> _Region:
    work = layout.root / region if region else layout.root
    prefix = f"{region}/" if region else ""
    index = layout.index_for(region)
    # Changed tracked files and new files (the exclude rules filter only the
    # new ones): one process for a small tree, two at once for a large one.
    small = _size(index) + _shared_size(layout) < ONE_LISTING_INDEX_BYTES
    calls = ([["ls-files", "-z", "-m", "-o", *rules]] if small
             else [["ls-files", "-z", "-m"], ["ls-files", "-z", "-o", *rules]])
    try:
        listings = git.run_parallel(calls, work_tree=work, index=index)
    except GitError:
        # A damaged private index costs a full re-hash, never a failed turn.
        if not index.exists():
            raise
        index.unlink()
        listings = git.run_parallel(calls, work_tree=work, index=index)
    stdout = b"\0".join(listing.stdout for listing in listings)
    stderr = listings[-1].stderr.decode("utf-8", "surrogateescape")

    fingerprint = watch.fingerprint()
    changed_rules = watch.checked(region) != fingerprint or any(
        raw == b".gitignore" or raw.endswith(b"/.gitignore") for raw in stdout.split(b"\0")
    )
    drop: list[str] = []
    if changed_rules:
        tracked_ignored = git.run(
            ["ls-files", "-z", "-c", "-i", *rules], work_tree=work, index=index
        )
        drop = [os.fsdecode(p) for p in tracked_ignored.stdout.split(b"\0") if p]
    ignored = set(drop)

    gaps = [_dir_gap(work, prefix, match) for match in _UNREADABLE_DIR.findall(stderr)]
    update: list[str] = []
    nested: list[str] = []
    for raw in sorted(set(stdout.split(b"\0"))):
        if not raw:
            continue
        rel = os.fsdecode(raw)
        if rel in ignored:
            continue
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

    # A directory that became a repository may still have entries here; one
    # that was a repository at this region's last capture has none left.
    fresh = [n for n in nested if n not in watch.nested.get(region, ())]
    if fresh:
        inside = git.run(
            ["ls-files", "-z", "--"] + [n[len(prefix) :] + "/" for n in fresh],
            work_tree=work,
            index=index,
        ).stdout
        drop += [os.fsdecode(p) for p in inside.split(b"\0") if p]
    if drop:
        git.run(
            [*SPLIT_INDEX, "update-index", "-z", "--force-remove", "--stdin"],
            work_tree=work,
            index=index,
            input=bulk.nul_join(drop),
        )
    if update:
        # Many files at once (a first capture): packs, not loose files (bulk.py).
        many = len(update) >= bulk.BULK_FILES
        # Packed in calls of BULK_CHUNK files (bulk.py); the index stays whole
        # until write-tree splits it once, leaving no stale shared file behind.
        opts = [*bulk.blob_options(git), "-c", "core.splitIndex=false"] if many else SPLIT_INDEX
        if many and len(update) >= bulk.HALVES_FILES and not index.exists():
            # A first capture: hashed on two cores (the paths are sorted, git's order).
            bulk.add_halves(git, work, index, update, opts)
        else:  # below BULK_FILES that is one call
            bulk.add(git, work, index, update, opts)
        if many:
            bulk.pack_trees(git, work, index)
    faults.point("capture.mid")
    tree = _write_tree(git, work, index, region, watch)
    watch.mark(region, fingerprint)  # only once the capture succeeded
    watch.nested[region] = frozenset(nested)
    return _Region(tree, gaps, nested)


def _write_tree(git: Git, work: Path, index: Path, region: str, watch: IgnoreWatch) -> str:
    """``git write-tree``, skipped when the index file is the one we last wrote from.

    Git replaces the index file (lock and rename) whenever it changes it,
    so an unchanged (inode, size, mtime) means unchanged content.
    """
    known = watch.trees.get(region)
    if known is not None and known[0] == _stamp(index):
        return known[1]
    tree = git.out([*SPLIT_INDEX, "write-tree"], work_tree=work, index=index)
    # After write-tree: it may have rewritten the index to store its cache.
    watch.trees[region] = (_stamp(index), tree)
    return tree


def _read_state(path: Path) -> dict[str, tuple[tuple[int, int, int], ...]]:
    """The fingerprints kept in PATH; empty when it is missing or not what we wrote."""
    try:
        data = json.loads(path.read_bytes())
        return {str(region): tuple((int(a), int(b), int(c)) for a, b, c in fp)
                for region, fp in data.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def _size(path: Path) -> int:
    """PATH's size in bytes; a missing index (a first capture) counts as large."""
    try:
        return path.stat().st_size
    except OSError:
        return ONE_LISTING_INDEX_BYTES


def _shared_size(layout: Layout) -> int:
    """The largest shared index file's size (`SPLIT_INDEX`): a split region's entries
    are mostly there, so its own index file alone understates its size."""
    try:
        with os.scandir(layout.git_dir) as entries:
            return max((e.stat().st_size for e in entries if e.name.startswith("sharedindex.")),
                       default=0)
    except OSError:
        return 0


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


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


EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""git's empty tree: ``read-tree --prefix`` of it adds no entry, so no graft does."""


def _graft(git: Git, trees: dict[str, str], watch: IgnoreWatch) -> str:
    """One tree: the root region's, with each nested region's under its prefix.

    Only the trees on the path from the root to each prefix are rewritten
    (``ls-tree`` and ``mktree`` of one folder each): reading the whole root
    tree into an index and writing it back cost ~1 s a capture at 100k
    files. The result is what ``read-tree`` and ``read-tree --prefix`` into
    one index would write; unchanged region trees reuse the last one.
    """
    key = tuple(sorted(trees.items()))
    if watch.graft is not None and watch.graft[0] == key:
        return watch.graft[1]
    tree = trees[""]
    # Outer regions first: an inner region's prefix runs through the outer one's tree.
    for region in sorted((r for r in trees if r), key=lambda r: (r.count("/"), r)):
        if trees[region] != EMPTY_TREE:
            tree = _graft_one(git, tree, region.split("/"), trees[region])
    watch.graft = (key, tree)
    return tree


def _graft_one(git: Git, tree: str | None, parts: list[str], sub: str) -> str:
    """TREE (None: no folder yet) with SUB at the path PARTS."""
    entries: dict[bytes, bytes] = {}
    if tree is not None:
        for line in git.run(["ls-tree", "-z", "--full-tree", tree]).stdout.split(b"\0"):
            if line:
                entries[line.partition(b"\t")[2]] = line
    name = os.fsencode(parts[0])
    if len(parts) == 1:
        child = sub
    else:
        below = entries.get(name)
        meta = below.partition(b"\t")[0].split(b" ") if below is not None else None
        # A file where the folder must go cannot be: the nested files' folder wins.
        inner = meta[2].decode() if meta is not None and meta[1] == b"tree" else None
        child = _graft_one(git, inner, parts[1:], sub)
    entries[name] = b"040000 tree " + child.encode() + b"\t" + name
    return git.out(["mktree", "-z"], input=b"".join(e + b"\0" for e in entries.values()))
