"""The private indexes are split: a capture rewrites only the entries that changed.

The shared part lives in the private repository (``sharedindex.*``), created
private like every file there; a split index still counts as large for the
choice of one or two listings; and a shared file gone (git expires unused
ones) costs that region a re-hash, never a failed capture. Real git.
"""

from __future__ import annotations

import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cp_helpers import write

from tandem.checkpoints import Checkpointer, capture

Make = Callable[..., Checkpointer]


def _shared(cp: Checkpointer) -> list[Path]:
    return sorted(cp.layout.git_dir.glob("sharedindex.*"))


def test_the_region_index_is_split_and_its_shared_file_private(root: Path, make: Make) -> None:
    for n in range(30):
        write(root, f"d/f{n}.txt", f"{n}\n")
    cp = make(root)
    first = cp.snapshot("first")
    shared = _shared(cp)
    assert len(shared) == 1
    assert stat.S_IMODE(shared[0].stat().st_mode) & 0o077 == 0
    write(root, "d/f1.txt", "changed\n")
    second = cp.snapshot("second")
    assert _shared(cp) == shared  # one entry changed: the shared part stays
    assert [f.path for f in cp.diff(first, second).files] == ["d/f1.txt"]


def test_a_split_index_still_counts_as_large(root: Path, make: Make,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(30):
        write(root, f"d/f{n}.txt", f"{n}\n")
    cp = make(root)
    cp.snapshot("first")
    index_size = cp.layout.index_for("").stat().st_size
    # Between the region's own file and its shared one: only the sum is large.
    monkeypatch.setattr(capture, "ONE_LISTING_INDEX_BYTES", index_size + 1)
    calls: list[list[str]] = []
    real = subprocess.Popen.__init__

    def seen(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        calls.append([str(a) for a in args])
        real(self, args, *rest, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", seen)
    cp.snapshot("again")
    listings = [c for c in calls if "ls-files" in c]
    assert len(listings) == 2, listings


def test_a_lost_shared_index_costs_a_rehash_not_a_failure(root: Path, make: Make) -> None:
    write(root, "a.txt", "a\n")
    write(root, "b.txt", "b\n")
    cp = make(root)
    first = cp.snapshot("first")
    for shared in _shared(cp):
        shared.unlink()
    write(root, "b.txt", "b2\n")
    second = make(root).snapshot("second")
    assert [f.path for f in cp.diff(first, second).files] == ["b.txt"]
