"""Revert one hunk or one file of a past patch onto the files as they are now.

The caller (review, in ``tandem.review``) names a patch by its two
checkpoints, a path, and a hunk index or none (the whole file), plus for
each path the checkpoint holding the state tandem last left it in (the
turn's end, or a later revert of it). A revert is refused when a path's
current state differs from that one: someone changed it since, and the
revert would be computed against content nobody reviewed.

How: a checkpoint of the files now (``before``); the new content of the
path is computed in the private repository — for a hunk, ``git apply
--cached -R`` of that one hunk onto the current blob in a scratch index (git
is the definition of the format ``diff-mode`` shows: exact context, offsets,
"no newline at end of file", no fuzz, refusal when it does not apply); for a
file, its pre-turn blob — and grafted onto ``before``'s tree; that tree is
kept as a checkpoint and restored through `Checkpointer.restore` with
``expected_current=before.tree``, so the write is the restore's own
transaction (temporary file, fsync, rename, rollback, crash recovery) and
an edit that lands in between refuses it; then a checkpoint of the result
(``after``). Nothing touches the user's repository or index.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from tandem.checkpoints import diffing
from tandem.checkpoints.checkpointer import Checkpointer
from tandem.checkpoints.diffing import RawChange
from tandem.checkpoints.git import Git, GitError
from tandem.protocol.base import TandemError

_ABSENT = "000000"
_PLACEHOLDER = "f"
"""The one path of a hunk's scratch index: no quoting of real names in patch headers."""

Entry = tuple[str, str] | None
"""A path's state in a tree: (mode, blob id), or None when absent."""


class RevertResult(BaseModel):
    """What a revert did: the checkpoints around it and the paths it changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    before: str
    """Checkpoint of the files just before the revert."""
    after: str
    """Checkpoint of the files just after it."""
    paths: list[str] = Field(default_factory=list)
    """Every path the revert concerns (a renamed file: its new and old path)."""
    restored: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)


def entry_in(git: Git, tree: str, path: str) -> Entry:
    """PATH's (mode, blob) in TREE, or None when TREE has no such file."""
    out = git.run(["ls-tree", "-z", "--full-tree", tree, "--", path]).stdout
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, name = rec.partition(b"\t")
        mode, kind, sha = meta.decode().split(" ")
        if kind == "blob" and os.fsdecode(name) == path:
            return mode, sha
    return None


def file_hunks(git: Git, old_sha: str, new_sha: str) -> list[str]:
    """The hunks (each from its ``@@`` line) of the diff from blob OLD_SHA to NEW_SHA.

    Blob to blob, with the defaults ``diff-tree -p`` uses, so they are the
    hunks the turn's patch shows for that file (renamed or not). Empty for a
    binary change.
    """
    text = git.run(["diff", "--no-color", "--no-ext-diff", old_sha, new_sha]).stdout
    hunks: list[list[bytes]] = []
    for line in text.splitlines(keepends=True):
        if line.startswith(b"@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
    return [b"".join(h).decode("utf-8", "surrogateescape") for h in hunks]


def hunk_range(hunk: str) -> str:
    """``@@ -a,b +c,d @@`` of HUNK (without the function context after it)."""
    head = hunk.split("\n", 1)[0]
    end = head.find("@@", 2)
    return head[: end + 2] if end > 0 else head


def reverse_hunk(git: Git, scratch: Path, current: tuple[str, str], hunk: str) -> str:
    """The blob id of CURRENT (mode, blob) with HUNK applied in reverse.

    ``conflict`` when git finds the hunk's new side nowhere in the file
    (it was reverted already, or the file was edited around it).
    """
    return apply_hunk(git, scratch, current, hunk, reverse=True)


def apply_hunk(git: Git, scratch: Path, current: tuple[str, str], hunk: str,
               *, reverse: bool = False) -> str:
    """The blob id of CURRENT (mode, blob) with HUNK applied (REVERSE: undone).

    ``conflict`` when git finds the side it looks for nowhere in the file.
    """
    index = scratch / "hunk.index"
    mode, sha = current
    git.run(["update-index", "--add", "--cacheinfo", f"{mode},{sha},{_PLACEHOLDER}"],
            index=index)
    body = hunk if hunk.endswith("\n") else hunk + "\n"
    patch = (f"diff --git a/{_PLACEHOLDER} b/{_PLACEHOLDER}\n--- a/{_PLACEHOLDER}\n"
             f"+++ b/{_PLACEHOLDER}\n{body}").encode("utf-8", "surrogateescape")
    try:
        git.run(["apply", "--cached", *(["-R"] if reverse else []), "--whitespace=nowarn", "-"],
                index=index, input=patch)
    except GitError as e:
        raise TandemError("conflict", "The hunk does not apply to the file as it is now "
                          "(reverted already?); nothing was changed",
                          {"stderr": e.stderr}) from e
    listed = git.out(["ls-files", "-s", "-z", "--", _PLACEHOLDER], index=index)
    return listed.split(" ")[1]


def derive_tree(git: Git, scratch: Path, base: str, changes: dict[str, Entry]) -> str:
    """BASE (a tree) with each path of CHANGES set to its entry (None: removed)."""
    index = scratch / "tree.index"
    git.run(["read-tree", base], index=index)
    for path, entry in sorted(changes.items()):
        if entry is None:
            git.run(["update-index", "--force-remove", "--", path], index=index)
        else:
            git.run(["update-index", "--add", "--cacheinfo", f"{entry[0]},{entry[1]},{path}"],
                    index=index)
    return git.out(["write-tree"], index=index)


def change_of(cp: Checkpointer, base: str, end: str, path: str) -> RawChange:
    """PATH's change between trees BASE and END (renames found), or ``not-found``."""
    for c in diffing.raw_changes(cp.git, base, end, renames=True):
        if c.path == path:
            return c
    raise TandemError("not-found", f"{path} is not in this patch")


def concerned_paths(cp: Checkpointer, base: str, end: str, path: str) -> list[str]:
    """PATH, and its old name when the patch from checkpoint BASE to END renamed it."""
    change = change_of(cp, cp.get(base).tree, cp.get(end).tree, path)
    return [path] + ([change.old_path] if change.old_path else [])


def revert(cp: Checkpointer, *, base: str, end: str, path: str, hunk: int | None,
           hunk_header: str | None, reference: dict[str, str], label: str) -> RevertResult:
    """Revert HUNK (an index among PATH's hunks; None: the whole file) of BASE → END.

    REFERENCE maps each concerned path to the checkpoint of the state tandem
    last left it in; HUNK_HEADER, when given, must be that hunk's ``@@``
    range (the hunk the user saw). Blocking: runs git.
    """
    start, stop = cp.get(base), cp.get(end)
    change = change_of(cp, start.tree, stop.tree, path)
    paths = [path] + ([change.old_path] if change.old_path else [])
    for p in paths:
        if diffing.covered(p, start.gaps + stop.gaps):
            raise TandemError("invalid", f"{p} was not captured by the turn (a gap); "
                              "tandem cannot revert it")
    before = cp.snapshot(f"before revert: {label}")
    for p in paths:
        if diffing.covered(p, before.gaps):
            raise TandemError("invalid", f"{p} cannot be captured now (too large or "
                              "unreadable); nothing was changed")
        known = reference.get(p, end)
        if entry_in(cp.git, before.tree, p) != entry_in(cp.git, cp.get(known).tree, p):
            raise TandemError("stale", f"{p} changed since the turn (by hand, or by "
                              "something else); nothing was reverted", {"path": p})
    with tempfile.TemporaryDirectory(dir=cp.layout.dir, prefix="revert-") as tmp:
        scratch = Path(tmp)
        changes = _changes(cp, scratch, change, before.tree, hunk, hunk_header)
        tree = derive_tree(cp.git, scratch, before.tree, changes)
    if tree == before.tree:
        raise TandemError("invalid", f"{path} is already as it was before the turn")
    target = cp.keep(tree, before.gaps, f"revert target: {label}")
    try:
        done = cp.restore(target, expected_current=before.tree)
    except TandemError as e:
        if e.code == "conflict":
            raise TandemError("stale", "Files changed while the revert ran; nothing was "
                              "reverted") from e
        raise
    after = cp.snapshot(f"after revert: {label}")
    return RevertResult(before=before.id, after=after.id, paths=paths, restored=done.restored,
                        deleted=done.deleted)


def _changes(cp: Checkpointer, scratch: Path, change: RawChange, now_tree: str,
             hunk: int | None, hunk_header: str | None) -> dict[str, Entry]:
    """The new entries of the paths a revert of CHANGE (one hunk, or all) sets."""
    old: Entry = None if change.old_mode == _ABSENT else (change.old_mode, change.old_sha)
    if hunk is None:
        if change.old_path:  # renamed: the new name goes, the old one comes back
            return {change.path: None, change.old_path: old}
        return {change.path: old}
    if change.status not in ("M", "T", "R") or old is None:
        raise TandemError("invalid", "A created or deleted file is reverted whole (K)")
    hunks = file_hunks(cp.git, change.old_sha, change.new_sha)
    if not hunks:
        raise TandemError("invalid", f"{change.path} is binary, or only its mode changed: "
                          "revert the whole file (K)")
    if not 0 <= hunk < len(hunks):
        raise TandemError("not-found", f"{change.path} has {len(hunks)} hunks, not {hunk + 1}")
    if hunk_header is not None and hunk_range(hunk_header) != hunk_range(hunks[hunk]):
        raise TandemError("stale", f"Hunk {hunk + 1} of {change.path} is not the one shown; "
                          "reload the review")
    current = entry_in(cp.git, now_tree, change.path)
    if current is None:
        raise TandemError("stale", f"{change.path} no longer exists")
    return {change.path: (current[0], reverse_hunk(cp.git, scratch, current, hunks[hunk]))}
