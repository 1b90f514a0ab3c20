"""A parallel tree's first checkpoint, taken from its checkout, and its borrowed objects.

A clean project's new tree is its commit checked out by the tree's own
store, which borrows the project's objects (git alternates) instead of
copying them: the base checkpoint is the commit's tree, kept without walking
the tree again. These tests hold that to what a capture would say: a file
changed right after creation is in the next capture (even at the same size),
carried changes are in the carried checkpoint, a committed file the ignore
rules match never shows as deleted. Maintenance copies the borrowed objects
in and drops the link, so removing the project afterwards breaks nothing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tandem.adapters.parallel import create
from tandem.app import App
from tandem.checkpoints import capture as capture_module
from tandem.checkpoints.checkpointer import Checkpointer
from tandem.checkpoints.maintenance import Retention, dissociate
from tandem.protocol.base import TandemError
from tandem.protocol.parallel import CreateParams

pytestmark = pytest.mark.anyio

OLD = "".join(f"line {i}\n" for i in range(1, 21))


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    """A committed project whose checkpoint is its commit's tree (nothing ignored in it)."""
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "a.txt").write_text(OLD)
    (root / "src" / "b.py").write_text("print('b')\n")
    (root / "gone.txt").write_text("to delete\n")
    (root / ".gitignore").write_text("*.log\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return root


async def _make(app: App, project: Path, name: str, carry: bool = False) -> str:
    made = await create(app, CreateParams(project=str(project), name=name, carry=carry))
    return made.record.session


def _count_captures(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []
    real = capture_module.capture

    def counted(git, layout, *rest):  # type: ignore[no-untyped-def]
        seen.append(layout.root)
        return real(git, layout, *rest)

    monkeypatch.setattr("tandem.checkpoints.checkpointer.capture", counted)
    return seen


async def test_the_base_is_the_commit_s_tree_kept_without_a_capture(
        app: App, clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _count_captures(monkeypatch)
    s = await _make(app, clean, "S")
    record = app.parallel.record(s)
    wt = Path(record.worktree)
    store = app.checkpoints.for_root(wt)
    assert wt not in seen  # the project's tree was captured, the new one not
    assert store.get(record.base_checkpoint).tree == _git(clean, "rev-parse", "HEAD^{tree}")
    # The objects are borrowed from the folder git names for the project, nothing else.
    alternates = store.layout.alternates.read_text()
    assert alternates == f"{(clean / '.git' / 'objects').resolve()}\n"
    assert app.parallel.patch(s).patch.files == []


async def test_a_file_changed_right_after_creation_is_captured(
        app: App, clean: Path) -> None:
    """Same size, written at once after the checkout: git's racy-entry check (the seeded
    index keeps the checkout index's time) still finds it; so a new and a deleted file."""
    s = await _make(app, clean, "S")
    wt = Path(app.parallel.record(s).worktree)
    same_size = OLD.replace("line 7\n", "LINE 7\n")
    assert len(same_size) == len(OLD)
    (wt / "a.txt").write_text(same_size)
    (wt / "new.txt").write_text("new\n")
    (wt / "gone.txt").unlink()
    files = {f.path: f.status for f in app.parallel.patch(s).patch.files}
    assert files == {"a.txt": "modified", "new.txt": "created", "gone.txt": "deleted"}
    store = app.checkpoints.for_root(wt)
    now = store.snapshot("after")
    assert store.git.run(["cat-file", "blob", f"{now.tree}:a.txt"]).stdout == \
        same_size.encode()


async def test_carried_changes_are_in_the_carried_checkpoint(
        app: App, clean: Path) -> None:
    (clean / "a.txt").write_text(OLD + "more\n")
    (clean / "untracked.txt").write_text("u\n")
    (clean / "skip.log").write_text("ignored\n")
    s = await _make(app, clean, "C", carry=True)
    record = app.parallel.record(s)
    store = app.checkpoints.for_root(record.worktree)
    assert record.carried_checkpoint is not None
    base = store.get(record.base_checkpoint)
    assert base.tree == _git(clean, "rev-parse", "HEAD^{tree}")
    carried = store.diff(record.base_checkpoint, record.carried_checkpoint)
    assert {f.path for f in carried.files} == {"a.txt", "untracked.txt"}
    assert app.parallel.patch(s).patch.files == carried.files


async def test_a_committed_ignored_file_never_shows_as_deleted(
        app: App, clean: Path) -> None:
    """The project's capture leaves it out, so it is not the commit's tree: the base is
    a capture of the new tree, as before, and the tree's patch is empty."""
    (clean / "old.log").write_text("committed log\n")
    _git(clean, "add", "-f", "old.log")
    _git(clean, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "log")
    s = await _make(app, clean, "L")
    record = app.parallel.record(s)
    store = app.checkpoints.for_root(record.worktree)
    assert "old.log" not in store.paths(record.base_checkpoint)
    assert app.parallel.patch(s).patch.files == []
    assert (Path(record.worktree) / "old.log").read_text() == "committed log\n"


async def test_maintenance_copies_the_borrowed_objects_so_a_removed_project_breaks_nothing(
        app: App, clean: Path) -> None:
    s = await _make(app, clean, "M")
    record = app.parallel.record(s)
    wt = Path(record.worktree)
    store = app.checkpoints.for_root(wt)
    (wt / "a.txt").write_text("changed\n")
    after = store.snapshot("after a turn")
    assert store.maintain(Retention(), lambda: {s}) is not None
    assert not store.layout.alternates.exists()
    assert not dissociate(store.git, store.layout)  # nothing left to do
    shutil.rmtree(clean)  # the project, its objects with it
    store.git.run(["fsck", "--connectivity-only", "--no-dangling"])
    patch = store.diff(record.base_checkpoint, after)
    assert [f.path for f in patch.files] == ["a.txt"] and "-line 1" in patch.diff
    # Objects only the private index names (the unchanged files) were copied too.
    assert store.git.run(["cat-file", "blob", f"{after.tree}:src/b.py"]).stdout == \
        b"print('b')\n"


async def test_a_refusal_stops_the_checkout_and_leaves_nothing(
        app: App, clean: Path) -> None:
    (clean / "a.txt").write_text("dirty\n")
    with pytest.raises(TandemError) as err:
        await _make(app, clean, "R")
    assert err.value.code == "conflict"
    assert not (clean.parent / "proj.tandem-worktrees" / "R").exists()
    assert _git(clean, "branch", "--list", "tandem/*") == ""
    assert _git(clean, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_only_an_object_folder_is_borrowed(app: App, tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    store = Checkpointer(app.home, root)
    (tmp_path / "file").write_text("x")
    odd = tmp_path / "a\nb"
    odd.mkdir()
    for bad in (Path("relative/objects"), tmp_path / "missing", tmp_path / "file", odd):
        with pytest.raises(TandemError) as err:
            store.borrow(bad)
        assert err.value.code == "invalid"
    with pytest.raises(TandemError):
        store.borrow("/tmp")  # type: ignore[arg-type]
    assert not store.layout.alternates.exists()


def test_adopt_is_only_for_a_seeded_store(app: App, tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    store = Checkpointer(app.home, root)
    with pytest.raises(TandemError) as err:
        store.adopt("not-a-tree", [], "base")
    assert err.value.code == "invalid"
    empty = store.git.out(["mktree"], input=b"")
    with pytest.raises(TandemError) as err:
        store.adopt(empty, [], "base")  # no checkout wrote this store's index
    assert err.value.code == "invalid"
