"""Differences between two captured trees: raw changes, file list, diff text."""

from __future__ import annotations

import os
from dataclasses import dataclass

from tandem.checkpoints.git import Git
from tandem.protocol.checkpoints import ChangeStatus, FileChange, Gap, PatchGap

_STATUS: dict[str, ChangeStatus] = {
    "A": "created",
    "D": "deleted",
    "M": "modified",
    "T": "modified",
    "R": "renamed",
}
_ABSENT_MODE = "000000"


@dataclass(frozen=True)
class RawChange:
    """One entry of ``git diff-tree --raw``."""

    status: str
    path: str
    old_path: str | None
    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    score: int | None


def raw_changes(git: Git, a: str, b: str, *, renames: bool) -> list[RawChange]:
    """Changes from tree A to tree B (with rename detection when RENAMES)."""
    return parse_raw(git.run(raw_args(a, b, renames=renames)).stdout)


def raw_args(a: str, b: str, *, renames: bool) -> list[str]:
    """The ``diff-tree`` arguments of `raw_changes` (for `Git.run_parallel`)."""
    args = ["diff-tree", "-r", "-z", "--raw", "--no-commit-id", "--no-ext-diff"]
    args += ["-M"] if renames else ["--no-renames"]
    return args + [a, b]


def parse_raw(stdout: bytes) -> list[RawChange]:
    """The changes of a ``diff-tree --raw -z`` output."""
    fields = stdout.split(b"\0")
    out: list[RawChange] = []
    i = 0
    while i < len(fields):
        meta = fields[i].decode()
        if not meta.startswith(":"):
            i += 1
            continue
        old_mode, new_mode, old_sha, new_sha, status = meta[1:].split(" ")
        letter = status[0]
        if letter in "RC":
            old, new = os.fsdecode(fields[i + 1]), os.fsdecode(fields[i + 2])
            i += 3
        else:
            old, new = None, os.fsdecode(fields[i + 1])
            i += 2
        score = int(status[1:]) if len(status) > 1 else None
        out.append(RawChange(letter, new, old, old_mode, new_mode, old_sha, new_sha, score))
    return out


def numstat(git: Git, a: str, b: str) -> dict[str, tuple[int | None, int | None]]:
    """Line counts per (new) path from A to B with renames; None, None when binary."""
    return parse_numstat(git.run(numstat_args(a, b)).stdout)


def numstat_args(a: str, b: str) -> list[str]:
    """The ``diff-tree`` arguments of `numstat`."""
    return ["diff-tree", "-r", "-z", "--numstat", "-M", "--no-ext-diff", a, b]


def parse_numstat(stdout: bytes) -> dict[str, tuple[int | None, int | None]]:
    """The line counts of a ``diff-tree --numstat -z`` output."""
    parts = stdout.split(b"\0")
    out: dict[str, tuple[int | None, int | None]] = {}
    i = 0
    while i < len(parts):
        head = parts[i]
        if not head:
            i += 1
            continue
        added, deleted, path = head.split(b"\t", 2)
        if path:
            i += 1
        else:  # rename: old and new path follow
            path = parts[i + 2]
            i += 3
        counts = (None, None) if added == b"-" else (int(added), int(deleted))
        out[os.fsdecode(path)] = counts
    return out


def diff_text(
    git: Git, a: str, b: str, paths: list[str] | None, max_chars: int, *, renames: bool = True
) -> tuple[str, bool]:
    """Unified diff text from A to B (limited to PATHS when given), and whether cut."""
    if paths is not None and not paths:
        return "", False
    return cut_text(git.run(text_args(a, b, paths, renames=renames)).stdout, max_chars)


def text_args(a: str, b: str, paths: list[str] | None, *, renames: bool = True) -> list[str]:
    """The ``diff-tree -p`` arguments of `diff_text`."""
    args = ["diff-tree", "-r", "-p", "--no-color", "--no-ext-diff", "--no-commit-id"]
    args += ["-M"] if renames else ["--no-renames"]
    args += [a, b]
    if paths is not None:
        args += ["--", *paths]
    return args


def cut_text(stdout: bytes, max_chars: int) -> tuple[str, bool]:
    """A ``diff-tree -p`` output as text, cut at a file boundary past MAX_CHARS."""
    text = stdout.decode("utf-8", "replace")
    if len(text) <= max_chars:
        return text, False
    cut = text.rfind("\ndiff --git ", 0, max_chars)
    return text[: cut + 1 if cut > 0 else max_chars], True


def covered(path: str, gaps: list[Gap]) -> bool:
    """True when PATH falls under one of GAPS."""
    return any(g.covers(path) for g in gaps)


def file_changes(
    changes: list[RawChange], counts: dict[str, tuple[int | None, int | None]]
) -> list[FileChange]:
    """The user-facing file list of CHANGES."""
    files: list[FileChange] = []
    for c in changes:
        added, deleted = counts.get(c.path, (None, None))
        old_mode = None if c.old_mode == _ABSENT_MODE else c.old_mode
        new_mode = None if c.new_mode == _ABSENT_MODE else c.new_mode
        files.append(
            FileChange(
                path=c.path,
                status=_STATUS.get(c.status, "modified"),
                old_path=c.old_path,
                binary=c.path in counts and added is None,
                old_mode=old_mode,
                new_mode=new_mode,
                mode_changed=old_mode is not None and new_mode is not None and old_mode != new_mode,
                additions=added,
                deletions=deleted,
                similarity=c.score if c.status == "R" else None,
            )
        )
    return files


def gap_changes(before: list[Gap], after: list[Gap]) -> list[PatchGap]:
    """Gaps whose uncaptured content may have changed between two captures."""
    old = {g.path: g for g in before}
    new = {g.path: g for g in after}
    out: list[PatchGap] = []
    for path in sorted(old.keys() | new.keys()):
        a, b = old.get(path), new.get(path)
        if a is not None and b is not None and a == b:
            continue
        gap = b or a
        assert gap is not None
        out.append(PatchGap(kind="skipped-file-changed", path=path, detail=describe(gap, a, b)))
    return out


def describe(gap: Gap, before: Gap | None, after: Gap | None) -> str:
    """A short sentence about a gap, for the user."""
    what = "too large to capture" if gap.reason == "too-large" else "unreadable"
    if gap.size is not None and gap.reason == "too-large":
        what += f" ({gap.size} bytes)"
    if before is None:
        return f"became {what}"
    if after is None:
        return f"was {what}; its earlier content is unknown"
    return f"{what}, and it changed"
