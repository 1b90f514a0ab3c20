"""Nested regions grafted along their paths equal the whole-index graft they replace.

A capture with nested repositories used to read the root tree into a fresh
index, each region's tree under its prefix (``read-tree --prefix``), and
write it back: ~1 s a capture at 100k files. Now only the trees on each
prefix's path are rewritten (``ls-tree``/``mktree``). Each shape here is
grafted both ways and the two trees compared: siblings under one folder,
a region inside a region, a prefix whose folders the root tree lacks, an
empty region, and the unchanged case that reuses the last graft. Real git.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cp_helpers import git, write

from tandem.checkpoints import Checkpointer
from tandem.checkpoints.capture import EMPTY_TREE, IgnoreWatch, _graft

Make = Callable[..., Checkpointer]


def _by_index(cp: Checkpointer, trees: dict[str, str], scratch: Path) -> str:
    """The old graft: every region's tree read into one index, written once."""
    index = scratch / "graft-index"
    cp.git.run(["read-tree", trees[""]], index=index)
    for region in sorted(r for r in trees if r):
        cp.git.run(["read-tree", f"--prefix={region}/", trees[region]], index=index)
    tree = cp.git.out(["write-tree"], index=index)
    index.unlink()
    return tree


def _tree_of(cp: Checkpointer, files: dict[str, str], scratch: Path) -> str:
    """A tree holding FILES (path: text), written through a scratch index."""
    index = scratch / "scratch-index"
    if index.exists():
        index.unlink()
    for path, text in files.items():
        sha = cp.git.out(["hash-object", "-w", "--stdin"], input=text.encode())
        cp.git.run(["update-index", "--add", "--cacheinfo", f"100644,{sha},{path}"],
                   index=index)
    tree = cp.git.out(["write-tree"], index=index) if files else EMPTY_TREE
    if index.exists():
        index.unlink()
    return tree


@pytest.mark.parametrize("shape", [
    {"vendor/lib": {"lib.c": "c"}, "vendor/other": {"o.c": "o"}},  # siblings
    {"pkg": {"a.txt": "a"}, "pkg/inner": {"i.txt": "i"}},  # a region inside one
    {"deep/er/still/lib": {"x": "x"}},  # folders the root tree lacks
    {"src/empty": {}},  # an empty region adds nothing
    {"src/empty": {}, "src/empty/inner": {"i": "i"}},  # ... but its own nested one does
    {"aa": {"f": "f"}, "a": {"g": "g"}, "a-b": {"h": "h"}},  # git's tree order
])
def test_graft_along_the_path_equals_the_index_graft(
        root: Path, make: Make, tmp_path: Path, shape: dict[str, dict[str, str]]) -> None:
    write(root, "top.txt", "top\n")
    cp = make(root)
    cp.snapshot("store")
    base = _tree_of(cp, {"top.txt": "top", "src/main.c": "m", "vendor/README": "r",
                         "a.txt": "z"}, tmp_path)  # never a file under a prefix
    trees = {"": base, **{r: _tree_of(cp, f, tmp_path) for r, f in shape.items()}}
    assert _graft(cp.git, trees, IgnoreWatch([])) == _by_index(cp, trees, tmp_path)


def test_an_unchanged_graft_spawns_no_git(root: Path, make: Make, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, "top.txt", "top\n")
    cp = make(root)
    cp.snapshot("store")
    trees = {"": _tree_of(cp, {"a": "a"}, tmp_path), "lib": _tree_of(cp, {"b": "b"}, tmp_path)}
    watch = IgnoreWatch([])
    first = _graft(cp.git, trees, watch)

    def no_git(*_a: object, **_k: object) -> None:
        raise AssertionError("git ran for an unchanged graft")

    monkeypatch.setattr(subprocess, "run", no_git)
    assert _graft(cp.git, dict(trees), watch) == first


def test_nested_repository_captures_through_a_real_store(root: Path, make: Make) -> None:
    write(root, "pkg/top.txt", "top\n")
    write(root, "pkg/lib/lib.c", "int x;\n")
    git(root / "pkg" / "lib", "init", "-q")
    cp = make(root)
    first = cp.snapshot("first")
    assert cp.paths(first) == ["pkg/lib/lib.c", "pkg/top.txt"]
    write(root, "pkg/lib/lib.c", "int y;\n")
    second = cp.snapshot("second")
    assert {f.path for f in cp.diff(first, second).files} == {"pkg/lib/lib.c"}
    assert cp.snapshot("third").tree == second.tree


def test_the_workspace_repositories_config_runs_nothing(root: Path, make: Make,
                                                        tmp_path: Path) -> None:
    """An attack: the root's and a nested repository's config name programs (an
    fsmonitor, hooks, a filter); captures, grafts, patches and a restore run none."""
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\nexit 0\n")
    script.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "post-index-change", "post-checkout", "reference-transaction"):
        (hooks / hook).symlink_to(script)
    for repo in (root, root / "pkg" / "lib"):
        repo.mkdir(parents=True, exist_ok=True)
        git(repo, "init", "-q")
        for key, value in (("core.fsmonitor", str(script)), ("core.hooksPath", str(hooks)),
                           ("filter.evil.clean", str(script)), ("core.splitIndex", "false")):
            git(repo, "config", key, value)
        write(repo, ".gitattributes", "* filter=evil\n")
    write(root, "top.txt", "top\n")
    write(root, "pkg/lib/lib.c", "int x;\n")
    cp = make(root)
    first = cp.snapshot("first")
    write(root, "pkg/lib/lib.c", "int y;\n")
    write(root, "top.txt", "changed\n")
    second = cp.snapshot("second")
    assert {f.path for f in cp.diff(first, second).files} == {"pkg/lib/lib.c", "top.txt"}
    cp.restore(first)
    assert (root / "pkg/lib/lib.c").read_text() == "int x;\n"
    assert not marker.exists(), marker.read_text()
    assert list(cp.layout.git_dir.glob("sharedindex.*"))  # our split, not their config
