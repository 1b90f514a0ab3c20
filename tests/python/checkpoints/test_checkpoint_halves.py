"""A first capture hashed in two halves on two cores stores what one process stores (bulk.py)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cp_helpers import write, write_varied_tree

from tandem.checkpoints import Checkpointer, bulk, indexjoin
from tandem.checkpoints.git import GitError

Make = Callable[..., Checkpointer]


def _ls_stage(cp: Checkpointer) -> bytes:
    index = cp.layout.index_for("")
    return cp.git.run(["ls-files", "-s", "-z"], work_tree=cp.layout.root, index=index).stdout


@pytest.fixture
def halves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "BULK_FILES", 10)
    monkeypatch.setattr(bulk, "HALVES_FILES", 20)


@pytest.mark.parametrize("chunk", [bulk.BULK_CHUNK, 7])
def test_halves_capture_equals_one_process(
    tmp_path: Path, root: Path, make: Make, monkeypatch: pytest.MonkeyPatch,
    halves: None, chunk: int,
) -> None:
    write_varied_tree(root)
    monkeypatch.setattr(bulk, "BULK_CHUNK", chunk)
    joined: list[int] = []
    real_join = indexjoin.join

    def counting_join(parts: list[Path], dest: Path) -> None:
        joined.append(len(parts))
        real_join(parts, dest)

    monkeypatch.setattr(indexjoin, "join", counting_join)
    cp = make(root)
    packed = cp.snapshot("halves")
    assert joined == [2]
    monkeypatch.setattr(bulk, "HALVES_FILES", 10**9)
    one = Checkpointer(tmp_path / "home-one", root)
    single = one.snapshot("one process")
    assert packed.tree == single.tree
    assert _ls_stage(cp) == _ls_stage(one)
    # No part is left beside the index, and the stat data came along:
    # an unchanged tree lists nothing as modified, so nothing is read again.
    assert not list(cp.layout.index_for("").parent.glob("*.part*"))
    listed = cp.git.run(["ls-files", "-z", "-m"], work_tree=root,
                        index=cp.layout.index_for("")).stdout
    assert listed == b""
    # A change after the joined capture is seen by the next one.
    write(root, "pkg1/sub1/f1.py", "changed\n")
    after = cp.snapshot("after")
    assert [f.path for f in cp.diff(packed, after).files] == ["pkg1/sub1/f1.py"]


def test_the_joined_index_is_dated_like_its_oldest_part(tmp_path: Path) -> None:
    """git trusts an entry's stat data only when the file is older than the index file.

    A file changed within the clock tick it was hashed in (same mtime, same
    ctime) is caught only by that rule, so the joined index must not look
    newer than the part its entry came from: it takes the oldest part's
    mtime. (Such a change cannot be made on purpose in a test: this checks
    the rule the safety rests on.)
    """
    first = _git_index(tmp_path, 2, ["a", "b"])
    second = _git_index(tmp_path, 2, ["c", "d"])
    os.utime(first, ns=(1_700_000_000_000_000_000,) * 2)
    indexjoin.join([first, second], tmp_path / "out")
    assert (tmp_path / "out").stat().st_mtime_ns == first.stat().st_mtime_ns
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o600


def _git_index(tmp_path: Path, version: int, names: list[str]) -> Path:
    work = tmp_path / f"work-{version}-{''.join(names)}"
    work.mkdir()
    for name in names:
        (work / name).write_text(name)
    index = tmp_path / f"index-{version}-{''.join(names)}"
    env = dict(os.environ, GIT_DIR=str(tmp_path / "repo.git"), GIT_INDEX_FILE=str(index),
               GIT_WORK_TREE=str(work))
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "repo.git")], check=True)
    subprocess.run(["git", "-c", f"index.version={version}", "update-index", "--add", *names],
                   cwd=work, env=env, check=True)
    return index


def test_join_refuses_what_it_does_not_read(tmp_path: Path) -> None:
    v4 = _git_index(tmp_path, 4, ["a", "b"])
    with pytest.raises(indexjoin.IndexFormatError, match="version 4"):
        indexjoin.join([v4], tmp_path / "out")
    good = _git_index(tmp_path, 2, ["a", "b"])
    torn = tmp_path / "torn"
    torn.write_bytes(good.read_bytes()[:-3] + b"xyz")
    with pytest.raises(indexjoin.IndexFormatError, match="checksum"):
        indexjoin.join([torn], tmp_path / "out")
    # Parts must be consecutive ranges: the same paths twice, or out of order, are refused.
    later = _git_index(tmp_path, 2, ["c", "d"])
    with pytest.raises(indexjoin.IndexFormatError, match="order"):
        indexjoin.join([later, good], tmp_path / "out")
    with pytest.raises(indexjoin.IndexFormatError, match="order"):
        indexjoin.join([good, good], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    indexjoin.join([good, later], tmp_path / "out")
    listed = subprocess.run(["git", "ls-files"], env=dict(
        os.environ, GIT_DIR=str(tmp_path / "repo.git"), GIT_INDEX_FILE=str(tmp_path / "out")),
        capture_output=True, check=True).stdout
    assert listed.split() == [b"a", b"b", b"c", b"d"]


def test_a_failed_half_leaves_no_index_and_no_part(
    root: Path, make: Make, halves: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A half that fails fails the capture (as one process would), and leaves nothing behind."""
    write_varied_tree(root)
    cp = make(root)
    real_run = cp.git.run

    def failing(args: list[str], **kw: object):  # type: ignore[no-untyped-def]
        index = kw.get("index")
        if "update-index" in args and isinstance(index, Path) and index.name.endswith(".part1"):
            return real_run(["update-index", "--no-such-option"], **kw)  # type: ignore[arg-type]
        return real_run(args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(cp.git, "run", failing)
    with pytest.raises(GitError, match="no-such-option"):
        cp.snapshot("fails")
    monkeypatch.undo()
    index = cp.layout.index_for("")
    assert not index.exists()
    assert not list(index.parent.glob("*.part*"))
