"""The store is packed, gone sessions' checkpoints are pruned, retention holds."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cp_helpers import write

from tandem.checkpoints import Checkpointer, maintenance
from tandem.checkpoints.maintenance import Retention
from tandem.protocol.base import TandemError

Make = Callable[..., Checkpointer]
NOW = Retention(grace="now")
LATER = time.time() + 2 * maintenance.MIN_AGE


def _has(cp: Checkpointer, obj: str) -> bool:
    return cp.git.run(["cat-file", "-e", obj], check=False).returncode == 0


def _blob(cp: Checkpointer, tree: str, path: str) -> str:
    return cp.git.out(["rev-parse", f"{tree}:{path}"])


def test_gone_session_checkpoints_are_pruned(root: Path, make: Make) -> None:
    cp = make(root)
    write(root, "a.txt", "gone session's secret\n")
    gone = cp.snapshot("turn 1", owner="s-gone", turn=1)
    secret = _blob(cp, gone.tree, "a.txt")
    write(root, "a.txt", "live\n")
    live = cp.snapshot("turn 1", owner="s-live", turn=1)
    other = cp.snapshot("backup")  # no owner: kept
    result = maintenance.maintain(cp.git, cp.layout, NOW, lambda: {"s-live"},
                                  prune_now=True, now=LATER)
    assert result is not None and result.dropped == [gone.id] and result.pruned
    with pytest.raises(TandemError) as e:
        cp.get(gone.id)
    assert e.value.code == "not-found"
    assert not _has(cp, secret)  # the objects went too, not only the ref
    assert {c.id for c in cp.history()} == {live.id, other.id}
    write(root, "a.txt", "changed again\n")
    cp.restore(live)  # what is kept still restores
    assert (root / "a.txt").read_text() == "live\n"


def test_young_checkpoints_of_unknown_sessions_are_kept(root: Path, make: Make) -> None:
    cp = make(root)
    write(root, "a.txt", "x\n")
    young = cp.snapshot("turn 1", owner="s-new", turn=1)
    # A session whose journal another process is still creating: not pruned.
    result = cp.maintain(NOW, lambda: set(), prune_now=True)
    assert result is not None and result.dropped == []
    assert cp.get(young.id).owner == "s-new"


def test_keep_turns_retention(root: Path, make: Make) -> None:
    cp = make(root)
    ids = []
    for turn in (1, 2, 3):
        write(root, "a.txt", f"turn {turn}\n")
        ids.append(cp.snapshot(f"before turn {turn}", owner="s1", turn=turn).id)
        write(root, "a.txt", f"after {turn}\n")
        ids.append(cp.snapshot("after a turn", owner="s1", turn=turn).id)
    result = cp.maintain(Retention(keep_turns=1, grace="now"), lambda: {"s1"}, prune_now=True)
    assert result is not None and sorted(result.dropped) == sorted(ids[:4])
    assert [c.id for c in cp.history()] == [ids[5], ids[4]]


def test_keep_days_retention(root: Path, make: Make) -> None:
    cp = make(root)
    write(root, "a.txt", "old\n")
    old = cp.snapshot("old", owner="s1", turn=1)
    result = maintenance.maintain(cp.git, cp.layout, Retention(keep_days=1, grace="now"),
                                  lambda: {"s1"}, prune_now=True, now=time.time() + 2 * 86400)
    assert result is not None and result.dropped == [old.id]


def test_pruning_keeps_what_the_index_stores(root: Path, make: Make) -> None:
    """A capture for a diff writes blobs no checkpoint holds; pruning must not lose them."""
    cp = make(root)
    write(root, "a.txt", "one\n")
    first = cp.snapshot("turn 1", owner="s-gone", turn=1)
    write(root, "new.txt", "only in the index\n")
    cp.diff(first)  # captures new.txt: blob written, index updated, no checkpoint
    assert cp.maintain(NOW, lambda: set(), prune_now=True, ) is not None
    maintenance.maintain(cp.git, cp.layout, NOW, lambda: set(), prune_now=True, now=LATER)
    after = cp.snapshot("turn 2", owner="s2", turn=2)  # new.txt unchanged: not re-hashed
    assert _has(cp, _blob(cp, after.tree, "new.txt"))
    (root / "new.txt").unlink()
    cp.restore(after)
    assert (root / "new.txt").read_text() == "only in the index\n"


def test_loose_objects_are_packed(
    root: Path, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintenance, "GC_AUTO", 1)
    cp = make(root)
    for turn in range(30):
        write(root, f"d{turn % 7}/f{turn}.txt", f"{turn}\n")
        cp.snapshot(f"turn {turn}", owner="s1", turn=turn)
    objects = cp.layout.git_dir / "objects"
    loose = sum(1 for d in objects.iterdir() if len(d.name) == 2 for _ in d.iterdir())
    assert loose > 50
    assert cp.maintain(Retention(), lambda: {"s1"}) is not None
    loose = sum(1 for d in objects.iterdir() if len(d.name) == 2 for _ in d.iterdir())
    assert loose == 0
    assert list((objects / "pack").glob("*.pack"))
    assert len(cp.history(100)) == 30


def test_maintenance_gives_way_to_a_running_snapshot(root: Path, make: Make) -> None:
    cp = make(root)
    with cp.layout.locked():
        assert cp.maintain(NOW, lambda: set(), prune_now=True) is None


def test_bad_owner_is_refused(root: Path, make: Make) -> None:
    cp = make(root)
    for owner in ("../x", "a/b", "", "x.lock", "-x"):
        with pytest.raises(TandemError) as e:
            cp.snapshot("t", owner=owner)
        assert e.value.code == "invalid"


def test_store_from_before_per_checkpoint_refs_keeps_its_chain(root: Path, make: Make) -> None:
    """A store written by the chained layout still lists and restores its checkpoints."""
    cp = make(root)
    write(root, "a.txt", "old layout\n")
    new = cp.snapshot("turn 1", owner="s1", turn=1)
    # What an older tandem wrote: a commit chained under refs/tandem/chain, no ref of its own.
    message = b'{"tandem_checkpoint":1,"label":"legacy","created":"2026-01-01T00:00:00Z",' + (
        b'"root":"' + str(cp.root).encode() + b'","gaps":[]}')
    legacy = cp.git.out(["commit-tree", new.tree], input=message)
    cp.git.run(["update-ref", "refs/tandem/chain", legacy])
    assert [c.id for c in cp.history()] == [new.id, legacy]
    maintenance.maintain(cp.git, cp.layout, NOW, lambda: set(), prune_now=True, now=LATER)
    assert [c.id for c in cp.history()] == [legacy]  # s1 is gone; the legacy one is kept
    write(root, "a.txt", "changed\n")
    cp.restore(legacy)
    assert (root / "a.txt").read_text() == "old layout\n"
