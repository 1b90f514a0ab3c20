"""Patches between checkpoints and the working tree: file list, text, completeness."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from cp_helpers import tree_state, write

from tandem.checkpoints import Checkpointer

Make = Callable[..., Checkpointer]


def _seed(root: Path) -> None:
    write(root, "keep.txt", "unchanged\n")
    write(root, "edit.txt", "one\ntwo\nthree\n")
    write(root, "gone.txt", "delete me\n")
    write(root, "old/name.txt", "a file that moves\n" * 5)
    write(root, "blob.bin", bytes(range(256)) * 4)
    write(root, "tool.sh", "#!/bin/sh\necho hi\n", mode=0o644)


def _change(root: Path) -> None:
    write(root, "edit.txt", "one\nTWO\nthree\nfour\n")
    os.unlink(root / "gone.txt")
    (root / "new").mkdir()
    os.rename(root / "old" / "name.txt", root / "new" / "name.txt")
    write(root, "blob.bin", bytes(reversed(range(256))) * 4)
    (root / "tool.sh").chmod(0o755)
    write(root, "created.txt", "fresh\n")


def test_file_list_and_statuses(root: Path, make: Make) -> None:
    _seed(root)
    cp = make(root)
    start = cp.snapshot("pre")
    _change(root)
    patch = cp.diff(start)
    by_path = {f.path: f for f in patch.files}
    assert set(by_path) == {
        "edit.txt",
        "gone.txt",
        "new/name.txt",
        "blob.bin",
        "tool.sh",
        "created.txt",
    }
    assert by_path["edit.txt"].status == "modified"
    assert (by_path["edit.txt"].additions, by_path["edit.txt"].deletions) == (2, 1)
    assert by_path["gone.txt"].status == "deleted" and by_path["gone.txt"].new_mode is None
    assert by_path["new/name.txt"].status == "renamed"
    assert by_path["new/name.txt"].old_path == "old/name.txt"
    assert by_path["blob.bin"].binary and by_path["blob.bin"].additions is None
    tool = by_path["tool.sh"]
    assert tool.mode_changed and (tool.old_mode, tool.new_mode) == ("100644", "100755")
    assert by_path["created.txt"].status == "created"
    assert patch.completeness == "captured" and patch.gaps == []
    assert patch.to_id is None and patch.from_id == start.id
    assert "diff --git a/edit.txt b/edit.txt" in patch.diff
    assert "rename from old/name.txt" in patch.diff
    assert "Binary files a/blob.bin and b/blob.bin differ" in patch.diff
    assert "old mode 100644\nnew mode 100755" in patch.diff


def test_diff_text_applies_with_git_apply(root: Path, tmp_path: Path, make: Make) -> None:
    """The text is a real patch: applied to a copy of the start, it gives the end."""
    write(root, "a.txt", "alpha\nbeta\n")
    write(root, "b/c.txt", "gamma\n")
    write(root, "d.txt", "delta\n")
    cp = make(root)
    start = cp.snapshot("pre")
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    write(root, "a.txt", "alpha\nBETA\n")
    os.unlink(root / "d.txt")
    write(root, "e/f.txt", "new\n", mode=0o755)
    patch = cp.diff(start)
    subprocess.run(
        ["git", "apply", "--unsafe-paths", "-p1", "-"],
        input=patch.diff.encode(),
        cwd=copy,
        check=True,
    )
    assert tree_state(copy) == tree_state(root)


def test_between_two_checkpoints_and_no_changes(root: Path, make: Make) -> None:
    write(root, "a.txt", "a\n")
    cp = make(root)
    first = cp.snapshot("one")
    assert cp.diff(first).completeness == "no-changes"
    write(root, "a.txt", "b\n")
    second = cp.snapshot("two")
    write(root, "a.txt", "c\n")  # after the second: not part of first..second
    patch = cp.diff(first, second)
    assert patch.to_id == second.id and patch.to_tree == second.tree
    assert "+b" in patch.diff and "+c" not in patch.diff
    assert cp.diff(second, second).completeness == "no-changes"


def test_caller_reported_gaps_make_it_incomplete(root: Path, make: Make) -> None:
    write(root, "a.txt", "a\n")
    cp = make(root)
    start = cp.snapshot("pre")
    quiet = cp.diff(start, ran_shell=True)
    assert quiet.completeness == "incomplete" and quiet.files == []
    assert [g.kind for g in quiet.gaps] == ["ran-shell"]
    write(root, "a.txt", "b\n")
    loud = cp.diff(start, wrote_outside=["/etc/hosts", "/tmp/x"])
    assert loud.completeness == "incomplete" and len(loud.files) == 1
    assert [(g.kind, g.path) for g in loud.gaps] == [
        ("wrote-outside", "/etc/hosts"),
        ("wrote-outside", "/tmp/x"),
    ]


def test_long_diff_is_cut_at_a_file_boundary(root: Path, make: Make) -> None:
    for i in range(20):
        write(root, f"f{i:02}.txt", "x\n")
    cp = Checkpointer(make(root).layout.dir.parent.parent, root, max_diff_chars=600)
    start = cp.snapshot("pre")
    for i in range(20):
        write(root, f"f{i:02}.txt", "y\n" * 10)
    patch = cp.diff(start)
    assert patch.diff_truncated and len(patch.diff) <= 600
    assert patch.diff.startswith("diff --git") and patch.diff.endswith("\n")
    assert len(patch.files) == 20  # the file list is never cut
