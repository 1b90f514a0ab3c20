"""Restore on real directories: exactness, plans, conflicts, faults, crashes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cp_helpers import git, tree_state, write

from tandem.checkpoints import Checkpointer
from tandem.protocol.base import TandemError

Make = Callable[..., Checkpointer]


def _seed(root: Path) -> None:
    write(root, "keep.txt", "unchanged\n")
    write(root, "edit.txt", "one\ntwo\n")
    write(root, "gone.txt", "delete me\n")
    write(root, "old/name.txt", "moves\n" * 5)
    write(root, "blob.bin", bytes(range(256)) * 8)
    write(root, "tool.sh", "#!/bin/sh\n", mode=0o755)
    write(root, "lib.sh", "# sourced\n", mode=0o644)
    write(root, "private.txt", "mine\n", mode=0o600)
    write(root, "was_file", "then a dir\n")
    write(root, "was_dir/inner.txt", "then a file\n")
    os.symlink("keep.txt", root / "link")


def _mess_up(root: Path) -> None:
    write(root, "edit.txt", "one\nTWO\nthree\n")
    os.unlink(root / "gone.txt")
    (root / "new").mkdir()
    os.rename(root / "old" / "name.txt", root / "new" / "name.txt")
    write(root, "blob.bin", b"\0" * 3000)
    (root / "tool.sh").chmod(0o644)
    (root / "lib.sh").chmod(0o755)
    write(root, "private.txt", "changed\n")
    write(root, "created.txt", "fresh\n")
    write(root, "made/deep/dirs/x.txt", "x\n")
    os.unlink(root / "was_file")
    write(root, "was_file/now.txt", "inside\n")
    os.unlink(root / "was_dir" / "inner.txt")
    (root / "was_dir").rmdir()
    write(root, "was_dir", "now a file\n")
    os.unlink(root / "link")
    os.symlink("edit.txt", root / "link")


def test_restore_is_exact(root: Path, make: Make) -> None:
    _seed(root)
    cp = make(root)
    start = cp.snapshot("pre")
    before = tree_state(root)
    _mess_up(root)
    result = cp.restore(start)
    assert tree_state(root) == before
    assert "created.txt" in result.deleted and "new/name.txt" in result.deleted
    assert "old/name.txt" in result.restored and "blob.bin" in result.restored
    # The state it replaced is kept: restoring the backup redoes the changes.
    messed = cp.diff(start, result.backup)
    assert {f.path for f in messed.files} >= {"created.txt", "new/name.txt"}
    cp.restore(result.backup)
    assert (root / "made/deep/dirs/x.txt").read_text() == "x\n"
    assert (root / "private.txt").stat().st_mode & 0o777 == 0o600
    assert os.readlink(root / "link") == "edit.txt"


def test_restore_in_user_repo_keeps_git_identical(user_repo: Path, make: Make) -> None:
    git_before = tree_state(user_repo / ".git")
    cp = make(user_repo)
    start = cp.snapshot("pre")
    before = tree_state(user_repo)
    write(user_repo, "src/app.py", "print('agent')\n")
    write(user_repo, "src/new.py", "x = 1\n")
    os.unlink(user_repo / "staged.txt")
    write(user_repo, "build/more.o", b"ignored output")
    cp.restore(start)
    after = tree_state(user_repo)
    # Ignored files are never touched: the new build output stays.
    assert after.pop("build/more.o") == ("file", b"ignored output", 0o644)
    assert after == before
    assert tree_state(user_repo / ".git") == git_before


def test_plan_lists_actions_and_external_changes(root: Path, make: Make) -> None:
    _seed(root)
    cp = make(root)
    start = cp.snapshot("turn 1")
    write(root, "edit.txt", "agent edit\n")
    write(root, "created.txt", "by agent\n")
    end_of_turn = cp.snapshot("after turn 1")
    # Someone else edits after the turn ended.
    write(root, "keep.txt", "edited by the user in another editor\n")
    write(root, "user_new.txt", "user's file\n")
    plan = cp.plan_restore(start, expected_after=end_of_turn)
    assert plan.to_restore == ["edit.txt", "keep.txt"]
    assert plan.to_delete == ["created.txt", "user_new.txt"]
    assert plan.changed_externally == ["keep.txt", "user_new.txt"]
    assert "diff --git a/created.txt b/created.txt" in plan.diff
    assert "-user's file" in plan.diff
    assert not plan.empty
    # Planning changes nothing.
    assert (root / "user_new.txt").exists()
    cp.restore(start, expected_current=plan.current_tree)
    assert cp.plan_restore(start).empty


def test_restore_refuses_when_tree_moved_since_plan(root: Path, make: Make) -> None:
    write(root, "a.txt", "a\n")
    cp = make(root)
    start = cp.snapshot("pre")
    write(root, "a.txt", "b\n")
    plan = cp.plan_restore(start)
    write(root, "a.txt", "c\n")  # after the user saw the plan
    with pytest.raises(TandemError) as info:
        cp.restore(start, expected_current=plan.current_tree)
    assert info.value.code == "conflict"
    assert (root / "a.txt").read_text() == "c\n"


def test_fault_midway_rolls_every_file_back(root: Path, make: Make) -> None:
    _seed(root)
    cp = make(root)
    start = cp.snapshot("pre")
    _mess_up(root)
    before = tree_state(root)
    seen: list[str] = []

    def fail_on_fifth(path: str) -> None:
        seen.append(path)
        if len(seen) == 5:
            raise OSError(28, "No space left on device (injected)")

    with pytest.raises(TandemError) as info:
        cp.restore(start, before_file=fail_on_fifth)
    assert info.value.code == "restore-failed"
    assert "injected" in info.value.message
    assert len(seen) == 5  # it really was midway: deletions done, writes begun
    assert tree_state(root) == before
    assert not cp.layout.pending.exists()
    # And a later restore still works.
    cp.restore(start)
    assert cp.plan_restore(start).empty


def test_real_failure_midway_rolls_back(root: Path, make: Make) -> None:
    """No hook: a file the checkpoint had is now an ignored directory in the way."""
    write(root, ".gitignore", "cache/\n")
    write(root, "a.txt", "a\n")
    write(root, "z.txt", "z\n")
    cp = make(root)
    start = cp.snapshot("pre")
    write(root, "a.txt", "changed\n")
    write(root, "z.txt", "changed\n")
    write(root, "new.txt", "new\n")
    write(root, ".gitignore", "cache/\nz.txt/\n")
    os.unlink(root / "z.txt")
    write(root, "z.txt/junk.bin", b"ignored, in the way")
    before = tree_state(root)
    with pytest.raises(TandemError) as info:
        cp.restore(start)
    assert info.value.code == "restore-failed"
    assert tree_state(root) == before


_CRASHER = """
import os, sys
from pathlib import Path
from tandem.checkpoints import Checkpointer
cp = Checkpointer(Path(sys.argv[1]), Path(sys.argv[2]))
count = 0
def die(path):
    global count
    count += 1
    if count == 4:
        os._exit(17)  # the process dies: no rollback runs
cp.restore(sys.argv[3], before_file=die)
"""


def test_crash_midway_is_rolled_back_by_next_use(home: Path, root: Path, make: Make) -> None:
    _seed(root)
    cp = make(root)
    start = cp.snapshot("pre")
    _mess_up(root)
    before = tree_state(root)
    proc = subprocess.run(
        [sys.executable, "-c", _CRASHER, str(home), str(root), start.id], check=False
    )
    assert proc.returncode == 17
    assert tree_state(root) != before  # the crash left it half restored
    pending = json.loads(cp.layout.pending.read_text())
    assert pending["target"] == start.id
    assert cp.recover() is True
    assert tree_state(root) == before
    assert cp.recover() is False
    # Without an explicit recover, the next operation recovers first.
    proc = subprocess.run(
        [sys.executable, "-c", _CRASHER, str(home), str(root), start.id], check=False
    )
    assert proc.returncode == 17
    snap = cp.snapshot("after crash")
    assert tree_state(root) == before
    assert cp.diff(snap).completeness == "no-changes"


def test_nested_repo_restore_keeps_nested_git(root: Path, make: Make) -> None:
    write(root, "sub/s.txt", "s\n")
    git(root / "sub", "init", "-q")
    git(root / "sub", "add", "-A")
    git(root / "sub", "commit", "-qm", "s")
    nested = tree_state(root / "sub" / ".git")
    cp = make(root)
    start = cp.snapshot("pre")
    write(root, "sub/s.txt", "changed\n")
    write(root, "sub/t.txt", "new\n")
    cp.restore(start)
    assert (root / "sub/s.txt").read_text() == "s\n"
    assert not (root / "sub/t.txt").exists()
    assert tree_state(root / "sub" / ".git") == nested


def test_restore_unknown_checkpoint(root: Path, make: Make) -> None:
    cp = make(root)
    with pytest.raises(TandemError) as info:
        cp.restore("f" * 40)
    assert info.value.code == "not-found"
    with pytest.raises(TandemError) as info:
        cp.plan_restore("abc")
    assert info.value.code == "invalid"


def test_failed_rollback_keeps_the_record_and_is_retried(root: Path, make: Make) -> None:
    write(root, ".gitignore", "*.lock\n")
    write(root, "a.txt", "a\n")
    write(root, "b.txt", "b\n")
    cp = make(root)
    start = cp.snapshot("pre")
    write(root, "a.txt", "changed\n")
    write(root, "created.txt", "new\n")
    before = tree_state(root)
    calls: list[str] = []

    def sabotage(path: str) -> None:
        calls.append(path)
        if len(calls) == 2:
            # created.txt is gone now; block its way back with an ignored file.
            write(root, "created.txt/held.lock", "someone else's")
            raise OSError(5, "I/O error (injected)")

    with pytest.raises(TandemError) as info:
        cp.restore(start, before_file=sabotage)
    assert info.value.code == "restore-failed"
    assert "could not put back" in info.value.message and "created.txt" in info.value.message
    assert cp.layout.pending.exists()
    # Every later operation retries the rollback first, and reports while it fails.
    with pytest.raises(TandemError) as again:
        cp.snapshot("blocked")
    assert again.value.code == "restore-failed"
    # Once the obstacle is gone, the retry succeeds: files as before the restore.
    (root / "created.txt" / "held.lock").unlink()
    (root / "created.txt").rmdir()
    assert cp.recover() is True
    assert tree_state(root) == before
    assert not cp.layout.pending.exists()


def test_restore_never_writes_through_a_symlinked_parent(
    tmp_path: Path, root: Path, make: Make
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    write(root, "d/f.txt", "inside\n")
    write(root, "a.txt", "a\n")
    cp = make(root)
    start = cp.snapshot("pre")
    # Now d is an ignored symlink to a folder outside the root.
    (root / "d" / "f.txt").unlink()
    (root / "d").rmdir()
    os.symlink(outside, root / "d")
    write(root, ".gitignore", "d\n")
    write(root, "a.txt", "changed\n")
    before = tree_state(root)
    with pytest.raises(TandemError) as info:
        cp.restore(start)
    assert info.value.code == "restore-failed" and "symbolic link" in info.value.message
    assert list(outside.iterdir()) == []
    assert tree_state(root) == before


def test_batches_restore_all_and_a_fault_in_a_later_batch_rolls_all_back(
        root: Path, make: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    from tandem.checkpoints import restore

    monkeypatch.setattr(restore, "STAGE_FILES", 3)  # ten files: four batches
    for n in range(10):
        write(root, f"d/f{n}.txt", f"{n} first\n")
    cp = make(root)
    start = cp.snapshot("pre")
    for n in range(10):
        write(root, f"d/f{n}.txt", f"{n} changed\n")
    before = tree_state(root)
    seen: list[str] = []

    def fail_on_seventh(path: str) -> None:
        seen.append(path)
        if len(seen) == 7:
            raise OSError(5, "I/O error (injected)")

    with pytest.raises(TandemError):
        cp.restore(start, before_file=fail_on_seventh)
    assert tree_state(root) == before  # no temporary copy left either
    done = cp.restore(start)
    assert len(done.restored) == 10
    assert all((root / f"d/f{n}.txt").read_text() == f"{n} first\n" for n in range(10))
    assert not [p for p in root.rglob("*") if ".tandem-" in p.name]
