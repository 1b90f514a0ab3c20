"""Making and removing a parallel session's own tree: a git worktree, or a copy.

A git project gets ``git worktree add --no-checkout -b tandem/NAME DIR HEAD``
through `Git.of_user_repository` (no hook, no fsmonitor, tandem's scrubbed
environment), then its files are written from the commit's blobs as git
stores them (``cat-file --batch``: no smudge filter runs) and the worktree's
own index is read from the commit (``read-tree``). Nothing else of the
user's repository is touched: not the main index, not the stash, no other
branch. A project that is no git repository gets a copy of what a
checkpoint captures (the same ignore rules, size cap and gaps).

Whether the main tree has uncommitted changes is read the same way, without
git's status (which may run a repository's clean filter): the main tree's
checkpoint against the commit's tree, path by path (blob ids are content
hashes in every repository).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from tandem.checkpoints.checkpointer import Checkpointer
from tandem.checkpoints.git import Git, GitError
from tandem.protocol.base import TandemError
from tandem.protocol.parallel import NAME_PATTERN

BRANCH_PREFIX = "tandem/"
_NAME = re.compile(NAME_PATTERN)
Listing = dict[str, tuple[str, str]]
"""path → (git mode, blob id) of every file of a tree."""


def check_name(name: object) -> str:
    """NAME when it is one path and one branch component, else ``invalid``.

    The protocol's pattern (a letter or digit first: no leading ``-`` or
    ``.``; no ``/``, space or shell character) and what git refuses in a
    branch name (``..``, a trailing ``.`` or ``.lock``)."""
    if (not isinstance(name, str) or not _NAME.match(name) or ".." in name
            or name.endswith((".", ".lock"))):
        raise TandemError("invalid", f"Not a parallel session name (one path and branch "
                          f"component: letters, digits, '.', '_', '-'): {name!r}")
    return name


def git_dir_of(project: Path) -> Path | None:
    """PROJECT's git directory when PROJECT is the top of a git work tree, else None."""
    dot = project / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():  # a worktree or a submodule: "gitdir: PATH"
        text = dot.read_text(errors="replace").strip()
        if text.startswith("gitdir:"):
            found = Path(text.removeprefix("gitdir:").strip())
            return found if found.is_absolute() else (project / found).resolve()
    return None


def listing(git: Git, tree: str) -> Listing:
    """Every file of TREE (commit or tree) in GIT's repository; submodules are left out."""
    out = git.run(["ls-tree", "-r", "-z", "--full-tree", tree]).stdout
    found: Listing = {}
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, name = rec.partition(b"\t")
        mode, kind, sha = meta.decode().split(" ")
        if kind == "blob":
            found[os.fsdecode(name)] = (mode, sha)
    return found


def write_files(git: Git, files: Listing, dest: Path) -> None:
    """Write FILES (blobs of GIT's repository) under DEST, with their modes."""
    by_sha: dict[str, list[tuple[str, str]]] = {}
    for path, (mode, sha) in files.items():
        by_sha.setdefault(sha, []).append((path, mode))
    for sha, data in git.blobs(by_sha):
        for path, mode in by_sha[sha]:
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or target.exists():
                target.unlink()
            if mode == "120000":
                os.symlink(os.fsdecode(data), target)
            else:
                # A new tree nobody uses yet: no fsync per file (thousands of them).
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                             0o755 if mode == "100755" else 0o644)
                with os.fdopen(fd, "wb") as out:
                    out.write(data)


def head_commit(git: Git) -> str:
    """The commit HEAD names, or ``invalid`` when the repository has none yet."""
    proc = git.run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], check=False)
    if proc.returncode != 0:
        raise TandemError("invalid", "The project's repository has no commit yet: commit "
                          "once, then start a parallel session")
    return proc.stdout.decode().strip()


def _on_disk(path: Path, algorithm: str = "sha1") -> tuple[str, str] | None:
    """PATH's (git mode, blob id) as it is on disk, or None when it is no file.

    ALGORITHM is the repository's object format (``sha1`` or ``sha256``)."""
    try:
        if path.is_symlink():
            data, mode = os.fsencode(os.readlink(path)), "120000"
        elif path.is_file():
            data = path.read_bytes()
            mode = "100755" if path.stat().st_mode & 0o100 else "100644"
        else:
            return None
    except OSError:
        return None
    return mode, hashlib.new(algorithm, b"blob %d\0" % len(data) + data).hexdigest()


def uncommitted(main: Checkpointer, main_tree: str, user: Git, commit: str
                ) -> tuple[list[str], Listing]:
    """Paths where the main tree (captured as MAIN_TREE) differs from COMMIT.

    A committed file the capture leaves out (it matches an ignore rule, or
    is over the size cap) is compared as it is on disk. Returns the paths,
    sorted, and the capture's listing (what to carry).
    """
    algorithm = user.out(["rev-parse", "--show-object-format"]) or "sha1"
    if algorithm == "sha1" and user.out(["rev-parse", f"{commit}^{{tree}}"]) == main_tree:
        return [], {}  # the same tree id: the same files, byte for byte; nothing to carry
    now = listing(main.git, main_tree)
    then = listing(user, commit)
    changed = []
    for p in sorted(set(now) | set(then)):
        if algorithm == "sha1" and now.get(p) == then.get(p):
            continue
        if p in then and (p not in now or algorithm != "sha1") and _on_disk(
                main.root / p, algorithm) == then[p]:
            # Committed and unchanged: left out of the capture, or the repository's
            # ids are not the store's (SHA-256), so the file itself is hashed.
            continue
        changed.append(p)
    return changed, now


def carry(main: Checkpointer, now: Listing, paths: list[str], dest: Path) -> None:
    """Write PATHS as the main tree has them into DEST (absent there: deleted)."""
    for p in paths:
        target = dest / p
        if target.is_symlink() or target.is_file():
            target.unlink()
    write_files(main.git, {p: now[p] for p in paths if p in now}, dest)
    for p in paths:
        source = main.root / p
        if p not in now and (source.is_file() or source.is_symlink()):
            # Not in the capture (ignored, or over the size cap): copied as it is.
            target = dest / p
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)


def add_worktree(user: Git, dest: Path, branch: str, commit: str,
                 store: Callable[[Path], Checkpointer] | None = None,
                 ready: Callable[[], None] | None = None) -> None:
    """``git worktree add`` DEST on a new BRANCH at COMMIT, its files checked out safely.

    With STORE (giving the new tree's own checkpoint store, which sets every path
    ``-filter -text -ident``, has no filter driver configured and runs no
    hook), the commit's objects are copied into it and checked out from it
    (`copy_objects`, `seed_checkout`): no program of the user's repository
    can run, and the worktree's index and the store's first index come out
    of the same checkout. Without it, or for a SHA-256 repository, the files
    are written from their blobs one by one. READY, when given, is called
    before any file is written; what it raises undoes the worktree and branch
    (the caller's checks that ran meanwhile, in another thread).
    """
    if not branch.startswith(BRANCH_PREFIX):
        raise TandemError("invalid", f"tandem makes only {BRANCH_PREFIX}* branches: {branch}")
    known = user.run(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], check=False)
    if known.returncode == 0:
        raise TandemError("exists", f"Branch {branch} exists already: choose another name")
    dest.parent.mkdir(parents=True, exist_ok=True)
    user.run(["worktree", "add", "--no-checkout", "-b", branch, str(dest), commit])
    try:
        # The worktree's own index (never the main one) holds the commit, as a checkout
        # would leave it.
        admin = git_dir_of(dest)
        if admin is None:
            raise TandemError("checkpoint-failed", f"git made no worktree at {dest}")
        sha1 = (user.out(["rev-parse", "--show-object-format"]) or "sha1") == "sha1"
        if store is not None and sha1:
            tree = store(dest)
            root_tree, big = copy_objects(user, tree, commit)
            if ready is not None:
                ready()
            seed_checkout(tree, root_tree, big, admin / "index")
        else:
            if ready is not None:
                ready()
            write_files(user, listing(user, commit), dest)
            user.run(["read-tree", commit], index=admin / "index")
    except BaseException:
        remove_worktree(user, dest, branch)
        raise


def copy_objects(user: Git, tree: Checkpointer, commit: str) -> tuple[str, list[str]]:
    """Copy COMMIT's tree, every object of it, into TREE's store; its id and the big files.

    One pack (``pack-objects`` in the user's repository, ``index-pack`` in the
    store: no delta search, the user's packed deltas reused). The big files
    are those over TREE's size cap (checked out as stored, so a blob's size
    is the file's): they stay out of the checkpoints, as gaps.
    """
    root_tree = user.out(["rev-parse", f"{commit}^{{tree}}"])
    pack = user.run(["pack-objects", "--revs", "--stdout", "--window=0", "--depth=0", "-q"],
                    input=root_tree.encode() + b"\n").stdout
    tree.git.run(["index-pack", "--stdin"], input=pack)
    big = [p for p, size in _sizes(tree.git, root_tree) if size > tree.size_cap]
    return root_tree, big


def seed_checkout(tree: Checkpointer, root_tree: str, big: list[str], index: Path) -> None:
    """Check ROOT_TREE (in TREE's store) out into TREE's root, and seed the store's index.

    The store's git, whose attributes win over every ``.gitattributes`` of the
    tree, writes the files and INDEX (``read-tree --reset -u``: git's own
    checkout, bytes as stored). The same index, with its stat data, becomes
    the store's private index, so the base checkpoint hashes nothing it just
    wrote; BIG (over the size cap) leave it again and become gaps as in any
    first capture.
    """
    tree.git.run(["read-tree", "--reset", "-u", root_tree], work_tree=tree.root, index=index)
    seeded = tree.layout.index_for("")
    if not seeded.exists():
        shutil.copyfile(index, seeded)
        os.chmod(seeded, 0o600)
        if big:
            tree.git.run(["update-index", "-z", "--force-remove", "--stdin"],
                         work_tree=tree.root, index=seeded,
                         input=b"".join(os.fsencode(p) + b"\0" for p in big))


def _sizes(git: Git, tree: str) -> list[tuple[str, int]]:
    """(path, size) of every blob of TREE (checked out as stored: the size on disk)."""
    out = git.run(["ls-tree", "-r", "-l", "-z", "--full-tree", tree]).stdout
    found = []
    for rec in out.split(b"\0"):
        meta, _, name = rec.partition(b"\t")
        fields = meta.split()
        if len(fields) == 4 and fields[1] == b"blob":
            found.append((os.fsdecode(name), int(fields[3])))
    return found


def remove_worktree(user: Git, dest: Path, branch: str) -> None:
    """``git worktree remove --force`` DEST and ``git branch -D`` BRANCH (tandem's only)."""
    if not branch.startswith(BRANCH_PREFIX):
        raise TandemError("invalid", f"tandem removes only {BRANCH_PREFIX}* branches: {branch}")
    if dest.exists():
        user.run(["worktree", "remove", "--force", "--force", str(dest)])
    else:  # removed by hand: drop its administrative folder only (a prune would drop all)
        common = (user.git_dir / user.out(["rev-parse", "--git-common-dir"])).resolve()
        for gitdir in (common / "worktrees").glob("*/gitdir"):
            if gitdir.read_text(errors="replace").strip() == str(dest / ".git"):
                shutil.rmtree(gitdir.parent)
    try:
        user.run(["branch", "-D", branch])
    except GitError as e:
        if "not found" not in e.stderr:
            raise


def make_copy(main: Checkpointer, tree: str, dest: Path) -> None:
    """Write the main tree's capture TREE into the new folder DEST."""
    if dest.exists():
        raise TandemError("exists", f"{dest} exists already: choose another name")
    dest.mkdir(parents=True)
    try:
        write_files(main.git, listing(main.git, tree), dest)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def remove_copy(dest: Path) -> None:
    """Remove a copy tandem made."""
    if dest.exists():
        shutil.rmtree(dest)
