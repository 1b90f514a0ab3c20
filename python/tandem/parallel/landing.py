"""Landing: parts of a parallel session's change written into the main tree.

The change is the parallel tree now against its base checkpoint (the tree
as tandem made it). For each file taken, three versions meet: *base* (the
file in the base checkpoint), *ours* (the main tree's file now) and
*theirs* (the parallel tree's file, or for one hunk the base with only that
hunk applied, by ``git apply --cached`` in the private store). When ours is
still the base, theirs is written as it is; when both changed, ``git
merge-file`` merges the three, and a conflict is written with its markers
(labels ``main``, ``base``, ``tandem/NAME``). A deletion meets an edit, or a
binary file changed on both sides: the main tree's file is kept and named.

The writes run inside a turn of the main session (`LandingRunner`), so the
engine's pre-turn and end checkpoints bracket them and Rewind undoes them.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tandem.checkpoints.checkpointer import Checkpointer
from tandem.checkpoints.git import Git
from tandem.checkpoints.reverting import apply_hunk, entry_in, file_hunks, hunk_range
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import FileChange, Patch
from tandem.store.fsutil import atomic_write


@dataclass
class Take:
    """One part to land: FILE whole (HUNK None) or its hunk HUNK (0-based)."""

    file: FileChange
    hunk: int | None = None
    hunk_header: str | None = None


@dataclass
class Outcome:
    """What a landing wrote into the main tree."""

    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Changed on both sides where a merge cannot be made: the main tree's file is kept."""
    unchanged: list[str] = field(default_factory=list)

    def sentence(self, name: str) -> str:
        """One message for the main session's transcript."""
        parts = [f"Landed parallel session {name}."]
        for label, paths in (("Wrote", self.written), ("Deleted", self.deleted),
                             ("Conflicts (markers written, resolve them)", self.conflicts),
                             ("Kept the main tree's file (changed on both sides)", self.kept),
                             ("Already the same in the main tree", self.unchanged)):
            if paths:
                parts.append(f"{label}: {', '.join(paths)}.")
        return " ".join(parts)


def select(patch: Patch, path: str | None, hunk: int | None, hunk_header: str | None,
           paths: list[str]) -> list[Take]:
    """The parts of PATCH a ``parallel/land`` call names (see `LandParams`)."""
    by_path = {f.path: f for f in patch.files}
    if path is not None:
        if path not in by_path:
            raise TandemError("not-found", f"{path} is not in the parallel session's change")
        f = by_path[path]
        if hunk is not None and (f.binary or f.status != "modified"):
            raise TandemError("invalid", f"{path} is {'binary' if f.binary else f.status}: "
                              "land it whole")
        return [Take(f, hunk, hunk_header)]
    if paths:
        missing = [p for p in paths if p not in by_path]
        if missing:
            raise TandemError("not-found", f"Not in the parallel session's change: "
                              f"{', '.join(missing)}")
        return [Take(by_path[p]) for p in paths]
    return [Take(f) for f in patch.files]


def _blob(git: Git, sha: str) -> bytes:
    return next(iter(git.blobs([sha])))[1]


def _read(path: Path) -> bytes | None:
    if path.is_symlink():
        return os.fsencode(os.readlink(path))
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _text(data: bytes | None) -> bool:
    return data is None or b"\0" not in data[:8000]


def merge3(git: Git, ours: bytes, base: bytes, theirs: bytes, label: str
           ) -> tuple[bytes, bool]:
    """``git merge-file`` of the three: (result, whether it holds conflicts)."""
    with tempfile.TemporaryDirectory(prefix="tandem-land-") as scratch:
        names = []
        for part, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            p = Path(scratch) / part
            p.write_bytes(data)
            names.append(str(p))
        proc = git.run(["merge-file", "-p", "-L", "main", "-L", "base", "-L", label, *names],
                       check=False)
    if proc.returncode < 0 or proc.returncode > 127:
        raise TandemError("checkpoint-failed", "git merge-file failed: "
                          + proc.stderr.decode("utf-8", "replace")[:500])
    return proc.stdout, proc.returncode > 0


@dataclass
class Version:
    """One path's two sides from the parallel tree: its base and what to land (None: absent)."""

    path: str
    base: bytes | None
    theirs: bytes | None
    mode: str | None
    """The landed file's git mode (``100755``, ``120000``…), None when it is deleted."""


def prepare(cp: Checkpointer, base_tree: str, now_tree: str, takes: list[Take]
            ) -> list[Version]:
    """What each of TAKES (parts of BASE_TREE → NOW_TREE in CP's store) lands.

    Runs before the landing's turn: a hunk that is not the one shown
    (``stale``) or none at all (``not-found``) refuses with nothing written.
    """
    git = cp.git
    versions: list[Version] = []
    with tempfile.TemporaryDirectory(prefix="tandem-land-") as scratch:
        for take in takes:
            f = take.file
            old = f.old_path or f.path
            base_entry = entry_in(git, base_tree, old)
            now_entry = entry_in(git, now_tree, f.path)
            theirs: bytes | None
            if take.hunk is not None:
                if base_entry is None or now_entry is None:
                    raise TandemError("invalid", f"{f.path}: land it whole")
                hunks = file_hunks(git, base_entry[1], now_entry[1])
                if take.hunk >= len(hunks):
                    raise TandemError("not-found", f"{f.path} has no hunk {take.hunk + 1}")
                hunk = hunks[take.hunk]
                if take.hunk_header is not None and hunk_range(take.hunk_header) != hunk_range(
                        hunk):
                    raise TandemError("stale", f"Hunk {take.hunk + 1} of {f.path} is not the "
                                      "one shown: reload the landing review")
                theirs = _blob(git, apply_hunk(git, Path(scratch), base_entry, hunk))
            else:
                theirs = None if now_entry is None else _blob(git, now_entry[1])
            base = None if base_entry is None else _blob(git, base_entry[1])
            versions.append(Version(f.path, base, theirs,
                                    now_entry[0] if now_entry is not None else None))
            if f.old_path and f.old_path != f.path and take.hunk is None:
                versions.append(Version(f.old_path, base, None, None))
    return versions


def land(git: Git, versions: list[Version], main: Path, label: str) -> Outcome:
    """Write VERSIONS into the main tree MAIN (merging three ways where both changed)."""
    out = Outcome()
    for v in versions:
        _one(git, main, v.path, v.base, v.theirs, v.mode, label, out)
    return out


def _one(git: Git, main: Path, path: str, base: bytes | None, theirs: bytes | None,
         mode: str | None, label: str, out: Outcome) -> None:
    target = main / path
    ours = _read(target)
    if ours == theirs:
        out.unchanged.append(path)
        return
    if theirs is None:  # the session deleted it
        if ours == base:
            target.unlink()
            out.deleted.append(path)
        else:
            out.kept.append(path)
        return
    if ours is None and base is not None:  # the main tree deleted what the session changed
        out.kept.append(path)
        return
    result, conflict = theirs, False
    if ours is not None and ours != base:  # both sides changed it: merge three ways
        if not (_text(ours) and _text(base) and _text(theirs)) or mode == "120000":
            out.kept.append(path)
            return
        result, conflict = merge3(git, ours, base or b"", theirs, label)
    if mode == "120000":
        if target.is_symlink() or target.exists():
            target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.fsdecode(result), target)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        keep = (target.stat().st_mode & 0o7777) if ours is not None and not target.is_symlink() \
            else None
        if keep is None or (mode == "100755") != bool(keep & 0o100):
            keep = 0o755 if mode == "100755" else 0o644
        atomic_write(target, result, keep)
    (out.conflicts if conflict else out.written).append(path)
