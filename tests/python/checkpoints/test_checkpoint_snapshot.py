"""Snapshots of real directories: ignore rules, .git, nested repositories, inputs."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from cp_helpers import git, tree_state, write

from tandem.checkpoints import Checkpointer
from tandem.protocol.base import TandemError

Make = Callable[..., Checkpointer]


def test_non_git_directory(root: Path, make: Make) -> None:
    write(root, "a.txt", "a\n")
    write(root, "deep/er/b.txt", "b\n")
    cp = make(root)
    first = cp.snapshot("turn 1")
    assert cp.paths(first) == ["a.txt", "deep/er/b.txt"]
    assert first.gaps == [] and first.label == "turn 1" and first.root == str(root)
    assert not (root / ".git").exists()
    # Unchanged tree, same tree id; both kept in history, newest first.
    second = cp.snapshot("turn 2")
    assert second.tree == first.tree and second.id != first.id
    assert [c.id for c in cp.history()] == [second.id, first.id]
    assert cp.get(first.id) == first


def test_user_repo_untouched_and_gitignore_respected(user_repo: Path, make: Make) -> None:
    before = tree_state(user_repo / ".git")
    cp = make(user_repo)
    first = cp.snapshot("pre")
    paths = cp.paths(first)
    assert paths == [".gitignore", "src/app.py", "staged.txt"]
    write(user_repo, "src/app.py", "print('v3')\n")
    write(user_repo, "new.txt", "n\n")
    cp.snapshot("post")
    cp.diff(first)
    cp.plan_restore(first)
    assert tree_state(user_repo / ".git") == before
    status = git(user_repo, "status", "--porcelain")
    assert "A  staged.txt" in status and " M src/app.py" in status


def test_user_git_environment_is_ignored(
    user_repo: Path, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An Emacs started from a shell inside a repository may export these.
    monkeypatch.setenv("GIT_DIR", str(user_repo / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(user_repo / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(user_repo))
    before = tree_state(user_repo / ".git")
    cp = make(user_repo)
    first = cp.snapshot("pre")
    write(user_repo, "x.txt", "x\n")
    cp.restore(first)
    assert tree_state(user_repo / ".git") == before
    assert not (user_repo / "x.txt").exists()


def test_nested_repositories_captured_as_files(root: Path, make: Make) -> None:
    write(root, "top.txt", "top\n")
    lib = root / "vendor" / "lib"
    write(root, "vendor/lib/lib.c", "int x;\n")
    write(root, "vendor/lib/.gitignore", "*.o\n")
    write(root, "vendor/lib/lib.o", b"\0obj")
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "lib")
    # A nested repository without any commit, itself holding one more.
    empty = root / "empty"
    write(root, "empty/e.txt", "e\n")
    git(empty, "init", "-q")
    write(root, "empty/inner/i.txt", "i\n")
    git(empty / "inner", "init", "-q")
    nested_git = {p: tree_state(p / ".git") for p in (lib, empty, empty / "inner")}
    cp = make(root)
    first = cp.snapshot("pre")
    assert cp.paths(first) == [
        "empty/e.txt",
        "empty/inner/i.txt",
        "top.txt",
        "vendor/lib/.gitignore",
        "vendor/lib/lib.c",
    ]
    write(root, "vendor/lib/lib.c", "int y;\n")
    write(root, "empty/inner/new.txt", "new\n")
    patch = cp.diff(first)
    assert {(f.path, f.status) for f in patch.files} == {
        ("vendor/lib/lib.c", "modified"),
        ("empty/inner/new.txt", "created"),
    }
    cp.restore(first)
    assert (lib / "lib.c").read_text() == "int x;\n"
    assert not (empty / "inner" / "new.txt").exists()
    assert (lib / "lib.o").read_bytes() == b"\0obj"  # ignored by the nested repo's rules
    for path, state in nested_git.items():
        assert tree_state(path / ".git") == state


def test_directory_that_becomes_a_repository(root: Path, make: Make) -> None:
    write(root, "pkg/a.txt", "a\n")
    cp = make(root)
    first = cp.snapshot("plain dir")
    git(root / "pkg", "init", "-q")
    second = cp.snapshot("now a repo")
    assert cp.paths(second) == ["pkg/a.txt"]
    assert second.tree == first.tree
    # And back: the .git goes away, the files stay captured.
    import shutil

    shutil.rmtree(root / "pkg" / ".git")
    write(root, "pkg/b.txt", "b\n")
    assert cp.paths(cp.snapshot("plain again")) == ["pkg/a.txt", "pkg/b.txt"]


def test_gitattributes_do_not_change_bytes(root: Path, make: Make) -> None:
    write(root, ".gitattributes", "* text=auto eol=crlf\n*.txt filter=nonexistent\n")
    write(root, "unix.txt", b"one\ntwo\n")
    write(root, "dos.txt", b"one\r\ntwo\r\n")
    cp = make(root)
    first = cp.snapshot("pre")
    write(root, "unix.txt", b"changed\n")
    write(root, "dos.txt", b"changed\n")
    cp.restore(first)
    assert (root / "unix.txt").read_bytes() == b"one\ntwo\n"
    assert (root / "dos.txt").read_bytes() == b"one\r\ntwo\r\n"


def test_symlinks_captured_as_links(root: Path, make: Make) -> None:
    write(root, "target.txt", "t\n")
    os.symlink("target.txt", root / "link")
    os.symlink("/nonexistent/elsewhere", root / "dangling")
    cp = make(root)
    first = cp.snapshot("pre")
    assert cp.paths(first) == ["dangling", "link", "target.txt"]
    os.unlink(root / "link")
    write(root, "link", "now a file\n")
    os.unlink(root / "dangling")
    cp.restore(first)
    assert os.readlink(root / "link") == "target.txt"
    assert os.readlink(root / "dangling") == "/nonexistent/elsewhere"


@pytest.mark.parametrize("state", [".state", "st*ate [1]"])
def test_tandem_home_inside_root_is_never_captured(tmp_path: Path, state: str) -> None:
    write(tmp_path, "proj/a.txt", "a\n")
    home = tmp_path / "proj" / state
    journal = write(home, "sessions/x/1.jsonl", '{"type":"header"}\n')
    cp = Checkpointer(home, tmp_path / "proj")
    first = cp.snapshot("one")
    second = cp.snapshot("two")
    assert cp.paths(second) == ["a.txt"] and second.tree == first.tree
    # A journal appended after the checkpoint survives a restore untouched.
    with open(journal, "a") as f:
        f.write('{"type":"rewind"}\n')
    cp.restore(first)
    assert journal.read_text().count("\n") == 2


def test_damaged_private_index_is_rebuilt(root: Path, make: Make) -> None:
    write(root, "a.txt", "a\n")
    cp = make(root)
    first = cp.snapshot("one")
    cp.layout.index_for("").write_bytes(b"garbage, not an index")
    write(root, "b.txt", "b\n")
    second = cp.snapshot("two")
    assert cp.paths(second) == ["a.txt", "b.txt"]
    assert cp.diff(first, second).files[0].path == "b.txt"


def test_concurrent_snapshots_are_serialised(root: Path, make: Make) -> None:
    for i in range(50):
        write(root, f"f{i}.txt", f"{i}\n")
    cps = [make(root), make(root)]  # two engines on one root, as two sessions would
    errors: list[BaseException] = []
    ids: list[str] = []

    def run(cp: Checkpointer) -> None:
        try:
            for n in range(5):
                ids.append(cp.snapshot(f"s{n}").id)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(cp,)) for cp in cps]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(ids)) == 10
    assert len(cps[0].history(limit=100)) == 10


def test_bad_inputs(tmp_path: Path, home: Path, root: Path, make: Make) -> None:
    write(root, "a.txt", "a\n")
    file_root = write(tmp_path, "plain.txt", "x")
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: Checkpointer(home, Path("relative/dir")), "invalid"),
        (lambda: Checkpointer(home, tmp_path / "missing"), "not-found"),
        (lambda: Checkpointer(home, file_root), "invalid"),
        (lambda: Checkpointer(home, root, size_cap=-1), "invalid"),
    ]
    cp = make(root)
    first = cp.snapshot("ok")
    cases += [
        (lambda: cp.snapshot("x" * 501), "invalid"),
        (lambda: cp.snapshot("nul\0byte"), "invalid"),
        (lambda: cp.snapshot(42), "invalid"),  # type: ignore[arg-type]
        (lambda: cp.get("not-an-id"), "invalid"),
        (lambda: cp.get("0" * 40), "not-found"),
        (lambda: cp.get(first.tree), "not-found"),  # a tree is not a checkpoint
        (lambda: cp.history(limit=0), "invalid"),
        (lambda: cp.restore(first, expected_current="nope"), "invalid"),
        (lambda: cp.restore(first, before_file="not callable"), "invalid"),  # type: ignore[arg-type]
        (lambda: cp.diff(first, wrote_outside="/etc/passwd"), "invalid"),
        (lambda: cp.diff(first, wrote_outside=[1, 2]), "invalid"),  # type: ignore[list-item]
        (lambda: cp.diff(first, ran_shell="yes"), "invalid"),  # type: ignore[arg-type]
        (lambda: cp.diff(first, to="0" * 40), "not-found"),
        (lambda: cp.paths("nope"), "invalid"),
    ]
    other_root = tmp_path / "other"
    other_root.mkdir()
    other = make(other_root)
    foreign = other.snapshot("elsewhere")
    # Both workspaces share nothing: the other store does not know this id.
    cases.append((lambda: cp.get(foreign.id), "not-found"))
    for call, code in cases:
        with pytest.raises(TandemError) as info:
            call()
        assert info.value.code == code, (call, info.value.message)


def test_odd_file_names_round_trip(root: Path, make: Make) -> None:
    names = ["sp ace.txt", "*.txt", "[ab].md", ":(top)x", "-rf", "ünï€ode.txt", "new\nline.txt"]
    for name in names:
        write(root, f"d/{name}", name)
    cp = make(root)
    assert make(root).snapshot("second engine").gaps == []  # same store
    first = cp.snapshot("odd")
    assert cp.paths(first) == sorted(f"d/{n}" for n in names)
    before = tree_state(root)
    for name in names:
        write(root, f"d/{name}", "changed")
    write(root, "d/[ab].md.new", "x")
    patch = cp.diff(first)
    assert sorted(f.path for f in patch.files) == sorted(
        [f"d/{n}" for n in names] + ["d/[ab].md.new"]
    )
    cp.restore(first)
    assert tree_state(root) == before


def test_empty_root(root: Path, make: Make) -> None:
    cp = make(root)
    first = cp.snapshot("nothing")
    assert cp.paths(first) == [] and first.gaps == []
    write(root, "a.txt", "a\n")
    assert [f.status for f in cp.diff(first).files] == ["created"]
    cp.restore(first)
    assert os.listdir(root) == []


def test_user_global_excludes_apply(
    tmp_path: Path, root: Path, make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    xdg = tmp_path / "xdg"
    write(xdg, "git/ignore", "*.swp\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    write(root, "a.txt", "a\n")
    write(root, ".a.txt.swp", "editor junk")
    write(root, "notes.private", "mine")
    assert make(root).paths(make(root).snapshot("xdg")) == ["a.txt", "notes.private"]
    # An explicit core.excludesFile in the user's global config replaces the default.
    excludes = write(tmp_path, "my-excludes", "*.private\n")
    config = write(tmp_path, "gitconfig", f"[core]\n\texcludesFile = {excludes}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    assert make(root).paths(make(root).snapshot("explicit")) == [".a.txt.swp", "a.txt"]


def test_ignored_nested_repository_is_not_captured(root: Path, make: Make) -> None:
    write(root, ".gitignore", "third_party/\n")
    write(root, "third_party/dep/x.c", "x\n")
    git(root / "third_party" / "dep", "init", "-q")
    write(root, "main.c", "m\n")
    cp = make(root)
    assert cp.paths(cp.snapshot("pre")) == [".gitignore", "main.c"]


def test_file_ignored_after_capture_leaves_the_capture(root: Path, make: Make) -> None:
    write(root, "app.py", "a\n")
    write(root, "out/gen.txt", "generated\n")
    cp = make(root)
    first = cp.snapshot("pre")
    assert cp.paths(first) == ["app.py", "out/gen.txt"]
    write(root, ".gitignore", "out/\n")
    write(root, "out/gen.txt", "regenerated\n")
    second = cp.snapshot("ignored now")
    assert cp.paths(second) == [".gitignore", "app.py"]
    plan = cp.plan_restore(first)
    assert plan.to_delete == [".gitignore"] and plan.to_restore == []
    assert [(g.path, g.kind) for g in plan.gaps] == [("out/gen.txt", "not-captured-now")]
    cp.restore(first)
    assert (root / "out/gen.txt").read_text() == "regenerated\n"  # never overwritten blind


def test_repository_info_exclude_applies_and_is_watched(user_repo: Path, make: Make) -> None:
    write(user_repo, "scratch.txt", "s\n")
    cp = make(user_repo)
    assert "scratch.txt" in cp.paths(cp.snapshot("pre"))
    with open(user_repo / ".git" / "info" / "exclude", "a") as f:
        f.write("scratch.txt\n")
    # Same engine: it notices the excludes file changed and drops the file.
    assert "scratch.txt" not in cp.paths(cp.snapshot("post"))
    assert (user_repo / "scratch.txt").exists()
