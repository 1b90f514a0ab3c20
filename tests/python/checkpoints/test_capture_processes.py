"""How many git processes a capture spawns, and what a new process re-checks.

``tandem ask`` is a new process each time: its two checkpoints used to spawn
ten git processes (two ``ls-files`` per capture, and the pass over the
tracked files against the ignore rules that every first capture of a
process ran). A small tree is now listed by one ``ls-files``; what the last
ignore check saw is kept in the store, so a new process checks again only
when the rules changed (start-up). Real git, real files.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cp_helpers import write

from tandem.checkpoints import Checkpointer

Make = Callable[..., Checkpointer]


def _without_config(args: list[str]) -> list[str]:
    """ARGS without git's leading ``-c KEY=VALUE`` pairs."""
    while len(args) >= 2 and args[0] == "-c" and "=" in args[1]:
        args = args[2:]
    return args


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """The git sub-commands (with their options) every process spawned from now on."""
    seen: list[list[str]] = []
    real = subprocess.Popen.__init__

    def counting(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        argv = [str(a) for a in args]
        if argv and Path(argv[0]).name == "git":
            seen.append(_without_config(argv[1:]))
        real(self, args, *rest, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", counting)
    yield seen


def test_a_new_process_turn_on_a_small_tree_spawns_eight_git_processes(
        root: Path, make: Make, spawned: list[list[str]]) -> None:
    write(root, "a.py", "a\n")
    write(root, ".gitignore", "*.log\n")
    make(root).snapshot("first")  # the store exists: an earlier ask made it
    spawned.clear()
    cp = make(root)  # a new `tandem ask`
    before = cp.snapshot("before")
    after = cp.snapshot("after")
    assert before.tree == after.tree
    names = [args[0] if args[0] != "ls-files" else " ".join(args[:4]) for args in spawned]
    assert names == [
        "config",  # the user's core.excludesFile
        "ls-files -z -m -o", "write-tree", "commit-tree", "update-ref",
        "ls-files -z -m -o", "commit-tree", "update-ref",  # the tree is known: no write-tree
    ], spawned


def test_a_large_index_is_listed_by_two_processes_at_once(
        root: Path, make: Make, spawned: list[list[str]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tandem.checkpoints import capture

    write(root, "a.py", "a\n")
    make(root).snapshot("first")
    monkeypatch.setattr(capture, "ONE_LISTING_INDEX_BYTES", 1)
    spawned.clear()
    make(root).snapshot("again")
    assert [a[:3] for a in spawned if a[0] == "ls-files"] == [
        ["ls-files", "-z", "-m"], ["ls-files", "-z", "-o"]]


def test_rules_grown_between_processes_still_drop_the_newly_ignored_file(
        user_repo: Path, make: Make, spawned: list[list[str]]) -> None:
    write(user_repo, "scratch.txt", "s\n")
    assert "scratch.txt" in make(user_repo).paths(make(user_repo).snapshot("pre"))
    # Outside the tree, while no tandem runs: a new process must see it.
    with open(user_repo / ".git" / "info" / "exclude", "a") as f:
        f.write("scratch.txt\n")
    cp = make(user_repo)
    assert "scratch.txt" not in cp.paths(cp.snapshot("post"))
    assert ["ls-files", "-z", "-c", "-i"] in [a[:4] for a in spawned]


def test_a_damaged_or_missing_check_record_means_check_again(
        root: Path, make: Make, home: Path, spawned: list[list[str]]) -> None:
    write(root, "a.py", "a\n")
    cp = make(root)
    cp.snapshot("first")
    state = cp.layout.ignore_state
    assert state.is_file() and oct(state.stat().st_mode & 0o777) == "0o600"
    for damage in (b"{not json", b'{"": [[1, 2]]}', b"[]", None):
        if damage is None:
            state.unlink()
        else:
            state.write_bytes(damage)
        spawned.clear()
        make(root).snapshot("again")
        assert ["ls-files", "-z", "-c", "-i"] in [a[:4] for a in spawned], damage
    # Checked once more, the record is sound again: the next process skips the pass.
    spawned.clear()
    make(root).snapshot("once more")
    assert ["ls-files", "-z", "-c", "-i"] not in [a[:4] for a in spawned]
