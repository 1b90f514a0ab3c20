"""Write a large capture's objects into packs, not thousands of loose files.

A first capture of a 20k-file tree stores 20k blobs and a few thousand
trees; as loose objects that is one file (and a directory entry, a chmod) per
object, which is where the time of a naive ``git add -A && git commit``
goes. Blobs go through git's bulk check-in (one pack per ``update-index``
when every blob is "big", ``core.bigFileThreshold=1``, given per call only:
in the repository's config it would also make diffs treat files as binary),
and the trees are built by ``git fast-import`` into a pack before
``write-tree`` runs, which then finds every tree present and writes none.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import threading
from pathlib import Path

from tandem.checkpoints import indexjoin
from tandem.checkpoints.git import Git

BULK_FILES = 500
"""From this many new or changed files in one region, its objects are packed."""

BULK_CHUNK = 5_000
"""Files per packing ``update-index`` call. git's bulk check-in looks each new
blob up in a plain list of the blobs its call wrote so far: one call of 95k
files spent ~20 s of CPU in that list alone (quadratic; 60k files: 8.4 s of
user CPU in one call, 3.6 s in calls of 6k). Each call makes its own pack."""

BULK_BLOBS = ["-c", "core.bigFileThreshold=1", "-c", "pack.compression=1"]
"""git options that stream every blob of one call into a single pack, deflated
at level 1 as git's own loose objects are (``core.looseCompression``): source
text packs about as small (+3 %) for ~20 % less CPU than level 6."""
BULK_GIT = (2, 37)
"""First git whose ``update-index`` puts a whole call's big blobs in one pack
(before, each blob over the threshold became a pack of its own)."""


HALVES_FILES = 10_000
"""From this many files a new index is hashed in two halves at once (`add_halves`)."""


def nul_join(paths: list[str]) -> bytes:
    """PATHS as ``--stdin -z`` reads them."""
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def add(git: Git, work: Path, index: Path, paths: list[str], opts: list[str]) -> None:
    """``update-index --add`` PATHS into INDEX, `BULK_CHUNK` files a call."""
    for start in range(0, len(paths), BULK_CHUNK):
        git.run([*opts, "update-index", "-z", "--add", "--remove", "--replace", "--stdin"],
                work_tree=work, index=index, input=nul_join(paths[start : start + BULK_CHUNK]))


def add_halves(git: Git, work: Path, index: Path, paths: list[str], opts: list[str]) -> None:
    """Add sorted PATHS to the new INDEX, each half in its own process, at once.

    git hashes on one core; two halves of the sorted paths, each into an index
    file of its own beside INDEX, use both, and the two files are joined into
    INDEX (`indexjoin`). An index git writes in a form the join does not read
    is hashed again into INDEX in one process: slower, never wrong. A failed
    half fails the whole, as one process would, and leaves neither part nor
    INDEX behind.
    """
    middle = len(paths) // 2
    parts = [index.with_name(f"{index.name}.part{i}") for i in range(2)]
    halves = [paths[:middle], paths[middle:]]
    errors: list[BaseException] = []

    def hash_half(i: int) -> None:
        try:
            add(git, work, parts[i], halves[i], [*opts, "-c", "index.version=2"])
        except BaseException as err:  # re-raised below, in the caller's thread
            errors.append(err)

    try:
        for part in parts:
            part.unlink(missing_ok=True)
        other = threading.Thread(target=hash_half, args=(1,))
        other.start()
        hash_half(0)
        other.join()
        if errors:
            raise errors[0]
        try:
            indexjoin.join(parts, index)
        except indexjoin.IndexFormatError:
            add(git, work, index, paths, opts)
    finally:
        for part in parts:
            part.unlink(missing_ok=True)


def blob_options(git: Git) -> list[str]:
    """`BULK_BLOBS` when this git packs a call's blobs together, else none (loose)."""
    return BULK_BLOBS if git_version(git.exe) >= BULK_GIT else []


@functools.cache
def git_version(exe: str) -> tuple[int, int]:
    """(major, minor) of the git at EXE; (0, 0) when it cannot be told."""
    try:
        out = subprocess.run([exe, "version"], capture_output=True, check=False).stdout
    except OSError:
        return (0, 0)
    found = re.search(rb"(\d+)\.(\d+)", out)
    return (int(found[1]), int(found[2])) if found else (0, 0)


def pack_trees(git: Git, work: Path, index: Path) -> None:
    """Write the trees of INDEX into one pack (``fast-import``), leaving no ref behind."""
    listing = git.run(["ls-files", "-s", "-z"], work_tree=work, index=index).stdout
    ref = f"refs/tandem/tmp/pack-{os.getpid()}"
    lines = [f"commit {ref}\ncommitter tandem <tandem@localhost> 0 +0000\ndata 0\n".encode()]
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        mode, sha, _stage = meta.split(b" ")
        lines.append(b"M %s %s %s\n" % (mode, sha, _quote(path)))
    lines.append(b"\n")
    try:
        git.run(
            ["-c", "fastimport.unpackLimit=0", "fast-import", "--quiet", "--force"],
            input=b"".join(lines),
        )
    finally:
        git.run(["update-ref", "-d", ref], check=False)


def _quote(path: bytes) -> bytes:
    """PATH as fast-import reads it: C-style quoted when it must be."""
    if b"\n" not in path and not path.startswith(b'"'):
        return path
    escaped = path.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    return b'"' + escaped + b'"'
