"""A large capture is packed (bulk.py) and stores exactly what the loose path stores."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cp_helpers import write, write_varied_tree

from tandem.checkpoints import Checkpointer, bulk

Make = Callable[..., Checkpointer]


def _loose_files(cp: Checkpointer) -> int:
    objects = cp.layout.git_dir / "objects"
    return sum(
        1 for d in objects.iterdir() if len(d.name) == 2 for _ in d.iterdir()
    )


@pytest.mark.parametrize("chunk", [bulk.BULK_CHUNK, 7])  # one packing call, or seven
def test_bulk_capture_equals_loose_capture(
    tmp_path: Path, root: Path, make: Make, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    write_varied_tree(root)
    monkeypatch.setattr(bulk, "BULK_CHUNK", chunk)
    monkeypatch.setattr(bulk, "BULK_FILES", 10**9)
    loose = Checkpointer(tmp_path / "home-loose", root).snapshot("loose")
    monkeypatch.setattr(bulk, "BULK_FILES", 10)
    cp = make(root)
    packed = cp.snapshot("bulk")
    assert packed.tree == loose.tree
    assert cp.paths(packed) == Checkpointer(tmp_path / "home-loose", root).paths(loose)
    # Blobs and trees are in packs: the empty blob (too small for bulk
    # check-in), the symlink's blob and the commit may be loose, not ~70 objects.
    assert _loose_files(cp) < 5
    packs = len(list((cp.layout.git_dir / "objects" / "pack").glob("*.pack")))
    assert packs == (2 if chunk > 100 else 8)  # the blobs' calls, and the trees'
    assert len(list(cp.layout.git_dir.glob("sharedindex.*"))) == 1  # split once, at the end
    refs = cp.git.out(["for-each-ref", "--format=%(refname)"])
    assert "tmp" not in refs  # fast-import's scratch ref is gone
    # And the next (small, loose) capture still works against the packed store.
    write(root, "pkg0/sub0/f0.py", "changed\n")
    after = cp.snapshot("after")
    patch = cp.diff(packed, after)
    assert [f.path for f in patch.files] == ["pkg0/sub0/f0.py"]
    assert "changed" in patch.diff  # diffed as text: the threshold is per call only


def test_old_git_keeps_blobs_loose(
    root: Path, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before 2.37 each big blob would be a pack of its own: such a git stays loose."""
    write_varied_tree(root)
    monkeypatch.setattr(bulk, "BULK_FILES", 10)
    monkeypatch.setattr(bulk, "git_version", lambda exe: (2, 34))
    cp = make(root)
    cp.snapshot("old git")
    assert len(list((cp.layout.git_dir / "objects" / "pack").glob("*.pack"))) <= 1  # trees
    assert _loose_files(cp) > 40
