"""A restore killed mid-write, and putting a finished restore back (`undo_restore`)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cp_helpers import tree_state, write

from tandem.checkpoints import Checkpointer
from tandem.protocol.checkpoints import RestoreStart

Make = Callable[..., Checkpointer]

# Dies right after the temporary copies are fsynced, before the second is
# renamed over its file: the copies not yet renamed stay in the workspace.
_KILLER = """
import os, sys
from pathlib import Path
from tandem.checkpoints import Checkpointer
cp = Checkpointer(Path(sys.argv[1]), Path(sys.argv[2]))
real, seen = os.replace, []
def replace(src, dst):
    if ".tandem-" in os.path.basename(os.fspath(src)):
        seen.append(src)
        if len(seen) == 2:
            os._exit(17)
    return real(src, dst)
os.replace = replace
cp.restore(sys.argv[3])
"""


def _temps(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if ".tandem-" in p.name)


def test_kill_mid_write_leaves_no_temp_file_after_recovery(
    home: Path, root: Path, make: Make
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        write(root, name, f"{name} first\n")
    cp = make(root)
    start = cp.snapshot("pre")
    for name in ("a.txt", "b.txt", "c.txt"):
        write(root, name, f"{name} changed\n")
    before = tree_state(root)
    proc = subprocess.run(
        [sys.executable, "-c", _KILLER, str(home), str(root), start.id], check=False
    )
    assert proc.returncode == 17
    left = _temps(root)
    # The copies never renamed: b.txt's, and c.txt's (a batch is written before it moves).
    assert left == [".b.txt.tandem-" + (token := json.loads(cp.layout.pending.read_text())[
        "token"]), f".c.txt.tandem-{token}"]
    # Look-alikes that are not this restore's: a user's file, another token, a folder.
    write(root, ".b.txt.tandem-0123abcd", "a user's file\n")
    write(root, f".c.txt.tandem-{'f' * 16}", "another restore's name, not recorded\n")
    (root / f".zz.txt.tandem-{token}").mkdir()
    kept = {n: tree_state(root)[n] for n in (".b.txt.tandem-0123abcd", f".c.txt.tandem-{'f' * 16}",
                                             f".zz.txt.tandem-{token}")}
    assert cp.recover() is True
    after = tree_state(root)
    assert {n: after[n] for n in kept} == kept
    assert {k: v for k, v in after.items() if k not in kept} == before


def test_on_start_sees_the_backup_before_any_file_moves(root: Path, make: Make) -> None:
    write(root, "a.txt", "one\n")
    cp = make(root)
    start = cp.snapshot("pre")
    write(root, "a.txt", "two\n")
    seen: list[tuple[RestoreStart, str]] = []

    def record(s: RestoreStart) -> None:
        seen.append((s, (root / "a.txt").read_text()))
        assert not cp.layout.pending.exists()

    done = cp.restore(start, on_start=record)
    [(info, content)] = seen
    assert content == "two\n"  # nothing had moved yet
    assert info.backup == done.backup.id and info.target == start.id and len(info.token) == 16

    def refuse(_s: RestoreStart) -> None:
        raise OSError(28, "No space left on device (injected)")

    write(root, "a.txt", "three\n")
    state = tree_state(root)
    with pytest.raises(OSError):
        cp.restore(start, on_start=refuse)
    assert tree_state(root) == state and not cp.layout.pending.exists()


def test_undo_restore_puts_back_only_what_the_restore_left(root: Path, make: Make) -> None:
    write(root, "a.txt", "a old\n")
    write(root, "b.txt", "b old\n")
    cp = make(root)
    start = cp.snapshot("pre")
    write(root, "a.txt", "a new\n")
    write(root, "b.txt", "b new\n")
    write(root, "created.txt", "made after the checkpoint\n")
    before = tree_state(root)
    done = cp.restore(start)
    assert (root / "a.txt").read_text() == "a old\n" and not (root / "created.txt").exists()
    # After the restore someone edits b.txt: that edit is not overwritten.
    write(root, "b.txt", "b edited by hand\n")
    result = cp.undo_restore(done.backup.id, start.id, None)
    assert result.put_back == ["a.txt", "created.txt"] and result.left == ["b.txt"]
    assert (root / "b.txt").read_text() == "b edited by hand\n"
    expected = dict(before, **{"b.txt": tree_state(root)["b.txt"]})
    assert tree_state(root) == expected
    # Undoing again changes nothing; the safety checkpoint holds the state before.
    again = cp.undo_restore(done.backup.id, start.id, None)
    assert again.put_back == [] and again.left == ["b.txt"]
    assert result.safety is not None and "b.txt" in cp.paths(result.safety)
