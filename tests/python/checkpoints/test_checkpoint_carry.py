"""Carrying a session's checkpoints to a moved root's store (real git)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cp_helpers import tree_state, write

from tandem.checkpoints import Checkpointer
from tandem.checkpoints.carry import carry
from tandem.checkpoints.layout import Layout
from tandem.protocol.base import TandemError

SID = "s1"


def _two_turns(home: Path, root: Path) -> tuple[str, str]:
    cp = Checkpointer(home, root)
    write(root, "a.txt", b"one\n")
    first = cp.snapshot("turn 1", owner=SID, turn=1)
    write(root, "a.txt", b"two\n")
    second = cp.snapshot("turn 2", owner=SID, turn=2)
    cp.snapshot("other", owner="s2", turn=1)
    return first.id, second.id


def _move(tmp_path: Path, root: Path) -> Path:
    dest = tmp_path / "moved"
    root.rename(dest)
    return dest


def test_carry_fetches_only_the_session_and_is_idempotent(
        home: Path, root: Path, tmp_path: Path) -> None:
    first, _ = _two_turns(home, root)
    dest = _move(tmp_path, root)
    assert carry(home, root, dest, SID) == 2
    assert carry(home, root, dest, SID) == 2  # again: nothing new, same refs
    cp = Checkpointer(home, dest)
    cp.restore(first)
    assert (dest / "a.txt").read_bytes() == b"one\n"
    refs = cp.git.out(["for-each-ref", "--format=%(refname)", "refs/tandem/cp/"])
    assert "/s2/" not in refs


def test_carry_survives_a_kill_after_the_fetch(home: Path, root: Path, tmp_path: Path) -> None:
    _two_turns(home, root)
    dest = _move(tmp_path, root)
    code = (f"from pathlib import Path; from tandem.checkpoints.carry import carry; "
            f"carry(Path({str(home)!r}), Path({str(root)!r}), Path({str(dest)!r}), {SID!r})")
    env = dict(os.environ, TANDEM_FAULTS="carry.fetched=kill")
    proc = subprocess.run([sys.executable, "-c", code], env=env, check=False)
    assert proc.returncode == 137
    assert carry(home, root, dest, SID) == 2  # the next carry completes it


def test_carry_without_an_old_store_does_nothing(home: Path, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    assert carry(home, tmp_path / "never", dest, SID) == 0


def test_carry_refuses_a_symlinked_old_store(home: Path, root: Path, tmp_path: Path) -> None:
    _two_turns(home, root)
    old = Layout(home, root)
    elsewhere = tmp_path / "elsewhere"
    old.dir.rename(elsewhere)
    old.dir.symlink_to(elsewhere)
    dest = _move(tmp_path, root)
    before = tree_state(dest)
    with pytest.raises(TandemError) as err:
        carry(home, root, dest, SID)
    assert err.value.code == "invalid"
    assert tree_state(dest) == before


@pytest.mark.parametrize("bad", ["../x", "", "a/b", "-upload-pack=touch"])
def test_carry_refuses_a_hostile_session(home: Path, root: Path, tmp_path: Path, bad: str) -> None:
    with pytest.raises(TandemError):
        carry(home, root, tmp_path / "d", bad)


def test_carry_refuses_relative_roots(home: Path) -> None:
    with pytest.raises(TandemError):
        carry(home, Path("old"), Path("/new"), SID)


def test_soak_seed_11_a_session_moved_twice_keeps_its_first_roots_checkpoints(
        home: Path, root: Path, tmp_path: Path) -> None:
    """Soak seed 11 (7 operations: send, move, move, revert): the second store refused
    a checkpoint made at the first root ("belongs to …") — carried roots were not
    carried on."""
    first, _ = _two_turns(home, root)
    mid = _move(tmp_path, root)
    carry(home, root, mid, SID)
    last = tmp_path / "moved-again"
    mid.rename(last)
    assert carry(home, mid, last, SID) == 2
    cp = Checkpointer(home, last)
    assert cp.get(first).root == str(last.resolve())
    cp.restore(first)
    assert (last / "a.txt").read_bytes() == b"one\n"


def test_a_session_moved_back_gets_the_checkpoints_made_meanwhile(
        home: Path, root: Path, tmp_path: Path) -> None:
    _two_turns(home, root)
    there = _move(tmp_path, root)
    carry(home, root, there, SID)
    write(there, "a.txt", b"three\n")
    third = Checkpointer(home, there).snapshot("turn 3", owner=SID, turn=3)
    there.rename(root)
    assert carry(home, there, root, SID) == 3
    Checkpointer(home, root).get(third.id)
