"""A turn's checkpoints spawn only the git calls the capture and the patch need.

Each git process costs 2–10 ms on a loaded machine; a turn used to read
back, with ``cat-file``, the two commits it had just written (three times),
and to run ``diff-tree`` between two identical trees (``bench/bench_turn.py``).
Counted on the real `Git` of a real store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tandem.checkpoints import Checkpointer
from tandem.checkpoints.git import Git
from tandem.checkpoints.service import CheckpointService
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import PatchSummary
from tandem.providers.base import TurnResult
from tandem.turns.service import GitCheckpoints


def _count(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git sub-commands run from now on (through `Git.run` and `Git.out`)."""
    seen: list[str] = []
    run, out, parallel = Git.run, Git.out, Git.run_parallel

    def name(args: list[str]) -> str:
        while args[:1] == ["-c"]:  # per-call options (the split index): the command
            args = args[2:]
        return args[0]

    def counted_run(self: Git, args: list[str], **kw: Any) -> Any:
        seen.append(name(args))
        return run(self, args, **kw)

    def counted_out(self: Git, args: list[str], **kw: Any) -> Any:
        seen.append(name(args))
        return out(self, args, **kw)

    def counted_parallel(self: Git, calls: list[list[str]], **kw: Any) -> Any:
        seen.extend(name(args) for args in calls)
        return parallel(self, calls, **kw)

    monkeypatch.setattr(Git, "run", counted_run)
    monkeypatch.setattr(Git, "out", counted_out)
    monkeypatch.setattr(Git, "run_parallel", counted_parallel)
    return seen


def _turn(tmp_path: Path, edit: bool) -> tuple[GitCheckpoints, Path, str, PatchSummary]:
    home, root = tmp_path / "home", tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    cps = GitCheckpoints(CheckpointService(home))
    cps.service.for_root(root).snapshot("first")  # the store exists, as after turn 1

    async def turn() -> tuple[str, PatchSummary]:
        start = await cps.before(root, "sess1", 2)
        assert start is not None
        if edit:
            (root / "a.txt").write_text("two\n")
        summary = (await cps.after(root, start, TurnResult(outcome="succeeded"))).patch
        assert summary is not None
        await asyncio.gather(*cps._background)
        return start, summary

    start, summary = asyncio.run(turn())
    return cps, root, start, summary


def test_a_turn_reads_back_none_of_its_own_commits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _count(monkeypatch)
    home, root = tmp_path / "home", tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    cps = GitCheckpoints(CheckpointService(home))
    cps.service.for_root(root).snapshot("first")

    async def turn() -> PatchSummary | None:
        start = await cps.before(root, "sess1", 2)
        (root / "a.txt").write_text("two\n")
        seen.clear()  # from the end of the pre-turn checkpoint on
        summary = (await cps.after(root, start, TurnResult(outcome="succeeded"))).patch
        return summary

    summary = asyncio.run(turn())
    assert summary is not None and summary.paths() == ["a.txt"]
    assert "cat-file" not in seen, seen
    assert seen.count("diff-tree") == 3  # changes, line counts, the diff text (at once)


def test_an_unchanged_tree_needs_no_diff(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    home, root = tmp_path / "home", tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    cp = Checkpointer(home, root)
    a = cp.snapshot("before")
    b = cp.snapshot("after")
    seen = _count(monkeypatch)
    patch = cp.diff(a, b)
    assert patch.files == [] and patch.completeness == "no-changes" and patch.diff == ""
    assert seen == [], seen


def test_a_checkpoint_of_another_root_is_still_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one, two = Checkpointer(home, tmp_path / "one"), Checkpointer(home, tmp_path / "two")
    a, b = one.snapshot("a"), one.snapshot("b")
    with pytest.raises(TandemError):
        two.diff(a, b)


def test_the_turn_patch_is_the_same_as_before(tmp_path: Path) -> None:
    cps, root, start, summary = _turn(tmp_path, edit=True)
    cp = cps.service.for_root(root)
    again = cp.diff(start, str(summary.to_id))  # by id: looked up in the store
    assert summary.files == again.files
    assert summary.diff_chars == len(again.diff)
