"""Where a workspace's checkpoints live, and the lock that serialises them.

``$TANDEM_HOME/checkpoints/<workspace-key>/`` holds:

* ``repo/`` — the private git directory (objects, a ref per checkpoint: `refs`);
* ``index/<region>`` — one private index per region (the root, and each
  nested repository captured as its own region); it keeps stat data so an
  unchanged tree is not re-hashed;
* ``workspace.json`` — which root this is, for people reading the folder;
* ``restore.json`` — present only while a restore is in progress;
* ``lock`` — a ``flock`` that serialises snapshots, restores and maintenance;
* ``maintained`` — its mtime is when the last pruning pass ran;
* ``carried.json`` — the old roots whose checkpoints were carried here (`carry`);
* ``repo/objects/info/alternates`` — only while a new parallel tree's store
  reads its project's objects in place (`Layout.borrow`), until maintenance
  copies them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tandem.checkpoints.git import Git
from tandem.paths import checkpoints_dir
from tandem.protocol.base import TandemError
from tandem.store.fsutil import atomic_write, open_private, private_dir

# Our own attributes win over every .gitattributes in the work tree: a
# snapshot stores bytes exactly (no eol conversion, no clean filter).
_ATTRIBUTES = "* -text !eol -filter -ident !working-tree-encoding\n"

_CONFIG = [
    ("core.bare", "false"),
    ("core.filemode", "true"),
    ("core.symlinks", "true"),
    ("core.ignorecase", "false"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.quotepath", "false"),
    ("core.logallrefupdates", "false"),
    ("gc.auto", "0"),  # packing runs only from maintenance.py, off the turn's path
    ("index.version", "4"),  # path-prefix compression: a smaller index to read and write
]


def _config_text() -> bytes:
    """The store's ``config`` file: git's own first line, then `_CONFIG`."""
    lines = ["[core]", "\trepositoryformatversion = 0"]
    section = "core"
    for key, value in _CONFIG:
        name, _, var = key.partition(".")
        if name != section:
            lines.append(f"[{name}]")
            section = name
        lines.append(f"\t{var} = {value}")
    return ("\n".join(lines) + "\n").encode()


def workspace_key(root: Path) -> str:
    """A stable folder name for ROOT: its basename (for people) and a hash."""
    text = os.fsencode(str(root))
    digest = hashlib.sha256(text).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name)[:40].strip("-.") or "root"
    return f"{name}-{digest}"


class Layout:
    """The folders and files of one workspace's checkpoint store."""

    def __init__(self, home: Path, root: Path) -> None:
        self.root = root
        self.dir = checkpoints_dir(home) / workspace_key(root)
        self.git_dir = self.dir / "repo"
        self.index_dir = self.dir / "index"
        self.pending = self.dir / "restore.json"
        self.lock_file = self.dir / "lock"
        self.maintained = self.dir / "maintained"
        self.ignore_state = self.dir / "ignore-checked.json"
        """What the ignore rules were when the tracked files were last checked (`IgnoreWatch`)."""
        self.carried = self.dir / "carried.json"
        """The old roots whose checkpoints were carried here (`carry`), a JSON list."""
        self.alternates = self.git_dir / "objects" / "info" / "alternates"
        """Present while the store reads objects from a repository's folder (`borrow`)."""

    def carried_roots(self) -> list[str]:
        """The roots this store holds carried checkpoints of (empty when none)."""
        try:
            data = json.loads(self.carried.read_bytes())
        except (FileNotFoundError, ValueError):
            return []
        return [r for r in data if isinstance(r, str)] if isinstance(data, list) else []

    def add_carried_roots(self, roots: Iterable[str]) -> None:
        """Record ROOTS as roots carried here (idempotent; one atomic write at most)."""
        known = self.carried_roots()
        fresh = [r for r in dict.fromkeys(roots) if r not in known]
        if fresh:
            atomic_write(self.carried, json.dumps([*known, *fresh]).encode() + b"\n")

    def borrow(self, objects: Path) -> None:
        """Let the store read objects it lacks from OBJECTS, a git object folder.

        OBJECTS must be absolute, an existing folder, and one line (the
        alternates file is a list of lines: a newline in a name would add a
        second entry). Idempotent. Maintenance copies what the store needs and
        drops the link again (`maintenance.dissociate`).
        """
        text = str(objects)
        if (not objects.is_absolute() or not objects.is_dir() or any(c in text for c in "\n\r")
                or text.startswith('"')):
            raise TandemError("invalid", f"not an object folder to borrow from: {text!r}")
        data = text.encode() + b"\n"
        try:
            if self.alternates.read_bytes() == data:
                return
        except FileNotFoundError:
            pass
        atomic_write(self.alternates, data)

    def index_for(self, region: str) -> Path:
        """The private index of REGION (``""`` is the root)."""
        if not region:
            return self.index_dir / "root"
        digest = hashlib.sha256(os.fsencode(region)).hexdigest()[:20]
        return self.index_dir / f"nested-{digest}"

    def ensure(self, git: Git) -> None:
        """Create the store on first use (idempotent, safe to race)."""
        if (self.git_dir / "HEAD").exists() and (self.git_dir / "info" / "attributes").exists():
            return
        private_dir(self.index_dir)
        if not (self.git_dir / "HEAD").exists():
            private_dir(self.git_dir)
            git.run(["init", "-q", "--bare", str(self.git_dir)])
            # Hooks are never run by plumbing; drop the samples anyway.
            for sample in (self.git_dir / "hooks").glob("*.sample"):
                sample.unlink()
        # The whole configuration in one write, not a `git config` per key (a
        # process each: a tenth of a second on a new parallel tree's path).
        # Before info/attributes, which marks a store as complete.
        atomic_write(self.git_dir / "config", _config_text())
        info = self.git_dir / "info"
        private_dir(info)
        atomic_write(info / "attributes", _ATTRIBUTES.encode())
        record = {"root": str(self.root), "key": self.dir.name}
        atomic_write(self.dir / "workspace.json", json.dumps(record).encode() + b"\n")

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the workspace's lock (across processes and threads)."""
        private_dir(self.dir)
        fd = open_private(self.lock_file, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @contextmanager
    def try_locked(self) -> Iterator[bool]:
        """Hold the lock if it is free now; yields False (not held) when it is busy."""
        private_dir(self.dir)
        fd = open_private(self.lock_file, os.O_RDWR)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)
