"""Parallel sessions in a real git repository, through real turns against the fake model.

Two parallel sessions edit the same file in their worktrees; each one's
Rewind leaves the other alone; landing the first applies cleanly, landing
the second merges three ways and leaves conflict markers; Rewind of a
landing turn in the main session puts the main tree back byte for byte; the
user's branches, stash and index are byte-identical throughout; a project
that is no git repository gets a copy.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI

from rewind.helpers import chat, entries, new_session, tree, use, writes
from tandem.adapters.parallel import create, land, patch, remove
from tandem.adapters.sessions import overview
from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.protocol.parallel import CreateParams, LandParams, RemoveParams, SessionParams
from tandem.protocol.sessions import OverviewParams

pytestmark = pytest.mark.anyio

OLD = "".join(f"line {i}\n" for i in range(1, 21))
A_TEXT = OLD.replace("line 2\n", "line 2 from A\n")
B_TEXT = OLD.replace("line 2\n", "line 2 from B\n").replace("line 19\n", "line 19 from B\n")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


def _user_state(root: Path) -> tuple[str, str, bytes, str]:
    """The user's branches (not tandem's), stash, index bytes and HEAD."""
    refs = "\n".join(line for line in _git(root, "for-each-ref").splitlines()
                     if "refs/heads/tandem/" not in line)
    return refs, _git(root, "stash", "list"), (root / ".git/index").read_bytes(), \
        _git(root, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git project with a 20-line file, a second branch and a stash entry."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text(OLD)
    (root / "keep.txt").write_text("kept\n")
    # Committed although ignored: the checkpoint leaves it out, it is no change.
    (root / ".gitignore").write_text("*.log\n")
    (root / "old.log").write_text("committed log\n")
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "add", "-f", "old.log")
    _git(root, *ident, "commit", "-qm", "init")
    _git(root, "branch", "feature")
    (root / "keep.txt").write_text("stashed\n")
    _git(root, *ident, "stash", "-q")
    return root


async def _make(app: App, project: Path, name: str, main: str | None = None,
                carry: bool = False) -> str:
    made = await create(app, CreateParams(project=str(project), name=name,
                                          parent_session=main, carry=carry))
    return made.record.session


async def test_two_parallel_sessions_land_cleanly_then_with_a_conflict(
        app: App, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _user_state(repo)
    script = [*writes(("a.txt", A_TEXT), ("a_only.txt", "from A\n")),
              *writes(("a.txt", B_TEXT), ("b_only.txt", "from B\n")),
              *writes(("a2.txt", "second turn of A\n")),
              *writes(("a.txt", OLD), ("b2.txt", "second turn of B\n"))]
    with FakeOpenAI(script) as fake:
        use(fake, monkeypatch)
        try:
            main = await new_session(app, repo)
            a = await _make(app, repo, "A", main)
            b = await _make(app, repo, "B", main)
            ra, rb = app.parallel.record(a), app.parallel.record(b)
            wa, wb = Path(ra.worktree), Path(rb.worktree)
            assert wa == repo.parent / "proj.tandem-worktrees" / "A"
            assert ra.branch == "tandem/A" and ra.base_commit == before[3].strip()
            assert (wa / "a.txt").read_text() == OLD and (wa / ".git").is_file()
            assert "tandem/A" in _git(repo, "branch", "--list", "tandem/*")
            assert (await chat(app, a, "edit in A")).outcome == "succeeded"
            assert (await chat(app, b, "edit in B")).outcome == "succeeded"
            assert (wa / "a.txt").read_text() == A_TEXT
            assert (wb / "a.txt").read_text() == B_TEXT
            assert (repo / "a.txt").read_text() == OLD  # the main tree is untouched
            # A second turn of A, rewound: B's tree is left alone.
            b_files = tree(wb)
            assert (await chat(app, a, "more in A")).outcome == "succeeded"
            plan = await app.rewinds.plan(a, 2)
            await app.rewinds.rewind(a, 2, plan.digest)
            assert not (wa / "a2.txt").exists() and (wa / "a.txt").read_text() == A_TEXT
            assert tree(wb) == b_files
            # And a second turn of B, rewound: A's tree is left alone.
            a_files = tree(wa)
            assert (await chat(app, b, "more in B")).outcome == "succeeded"
            assert (wb / "a.txt").read_text() == OLD
            plan = await app.rewinds.plan(b, 2)
            await app.rewinds.rewind(b, 2, plan.digest)
            assert tree(wb) == b_files and tree(wa) == a_files
            assert _user_state(repo) == before

            shown = await patch(app, SessionParams(session=a))
            assert sorted(f.path for f in shown.patch.files) == ["a.txt", "a_only.txt"]
            rows = {r.id: r for r in (await overview(app, OverviewParams())).rows}
            assert rows[a].parallel is not None and rows[a].parallel.state == "ready"
            assert rows[a].project == str(repo) and rows[a].parallel.files == 2
            assert rows[a].parallel.additions == 2 and rows[a].parallel.deletions == 1

            pristine = tree(repo)
            first = await land(app, LandParams(session=a))
            assert first.outcome == "succeeded" and first.session == main
            assert sorted(first.written) == ["a.txt", "a_only.txt"] and not first.conflicts
            assert (repo / "a.txt").read_text() == A_TEXT
            start = [e for e in entries(app, main) if e["type"] == "turn_start"][-1]
            assert start["turn"] == first.turn and start["provider"] == "tandem:land"
            after_a = tree(repo)
            rows = {r.id: r for r in (await overview(app, OverviewParams())).rows}
            assert rows[a].parallel is not None and rows[a].parallel.state == "landed"

            second = await land(app, LandParams(session=b))
            assert second.outcome == "succeeded" and second.conflicts == ["a.txt"]
            assert second.written == ["b_only.txt"]
            merged = (repo / "a.txt").read_text()
            assert "<<<<<<< main\nline 2 from A\n=======\nline 2 from B\n>>>>>>> tandem/B\n" \
                in merged
            assert "line 19 from B\n" in merged  # the part only B changed merges cleanly

            # Rewind of the landing turn: the main tree as the first landing left it.
            plan = await app.rewinds.plan(main, second.turn)
            assert plan.changed_externally == []
            await app.rewinds.rewind(main, second.turn, plan.digest)
            assert tree(repo) == after_a
            plan = await app.rewinds.plan(main, first.turn)
            await app.rewinds.rewind(main, first.turn, plan.digest)
            assert tree(repo) == pristine
            assert _user_state(repo) == before

            # One hunk of B: only line 19 comes over.
            hunks = await patch(app, SessionParams(session=b))
            assert "@@" in hunks.patch.diff
            one = await land(app, LandParams(session=b, path="a.txt", hunk=1))
            assert one.written == ["a.txt"]
            assert (repo / "a.txt").read_text() == OLD.replace("line 19\n", "line 19 from B\n")
            with pytest.raises(TandemError) as err:
                await land(app, LandParams(session=b, path="a.txt", hunk=0,
                                           hunk_header="@@ -9,9 +9,9 @@"))
            assert err.value.code == "stale"

            # Cleaning up: never-landed changes ask first; the branches go, the journal stays.
            with pytest.raises(TandemError) as err:
                await remove(app, RemoveParams(session=a))
            assert err.value.code == "conflict"
            _git(repo, "worktree", "add", "-q", "--detach", str(repo.parent / "mine"))
            # The user's own worktree and one of tandem's, deleted by hand: removing
            # tandem's drops its entry only (a prune would drop the user's too).
            shutil.rmtree(repo.parent / "mine")
            shutil.rmtree(wb)
            for sid in (a, b):
                gone = await remove(app, RemoveParams(session=sid, force=True))
                assert gone.removed
            assert not wa.exists() and not wb.exists()
            assert _git(repo, "branch", "--list", "tandem/*") == ""
            listed = _git(repo, "worktree", "list")
            assert listed.count("\n") == 2 and str(repo.parent / "mine") in listed
            assert Path(app.sessions.manager.find(a, str(repo))).exists()
            assert _user_state(repo) == before
        finally:
            await app.turns.aclose()


async def test_uncommitted_changes_are_refused_or_carried_over(
        app: App, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "a.txt").write_text(A_TEXT)
    (repo / "new.txt").write_text("untracked\n")
    index = (repo / ".git/index").read_bytes()
    with pytest.raises(TandemError) as err:
        await _make(app, repo, "C")
    assert err.value.code == "conflict" and err.value.data["dirty"] == ["a.txt", "new.txt"]
    assert not (repo.parent / "proj.tandem-worktrees" / "C").exists()
    assert _git(repo, "branch", "--list", "tandem/*") == ""
    c = await _make(app, repo, "C", carry=True)
    record = app.parallel.record(c)
    assert record.carried_checkpoint is not None
    wc = Path(record.worktree)
    assert (wc / "a.txt").read_text() == A_TEXT and (wc / "new.txt").read_text() == "untracked\n"
    assert (repo / ".git/index").read_bytes() == index
    # The main tree still has them: landing the carried change changes nothing.
    done = await land(app, LandParams(session=c))
    assert done.outcome == "succeeded" and done.written == [] and done.conflicts == []
    assert (repo / "a.txt").read_text() == A_TEXT
    await app.turns.aclose()


async def test_a_project_without_git_gets_a_copy(
        app: App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text(OLD)
    (plain / "skip.log").write_text("ignored? no: no git, nothing is ignored\n")
    with FakeOpenAI(writes(("a.txt", A_TEXT))) as fake:
        use(fake, monkeypatch)
        try:
            main = await new_session(app, plain)
            d = await _make(app, plain, "D", main)
            record = app.parallel.record(d)
            assert record.kind == "copy" and record.branch is None
            wd = Path(record.worktree)
            assert tree(wd) == tree(plain)
            assert (await chat(app, d, "edit")).outcome == "succeeded"
            pristine = tree(plain)
            done = await land(app, LandParams(session=d))
            assert done.written == ["a.txt"] and (plain / "a.txt").read_text() == A_TEXT
            plan = await app.rewinds.plan(main, done.turn)
            await app.rewinds.rewind(main, done.turn, plan.digest)
            assert tree(plain) == pristine
            await remove(app, RemoveParams(session=d, force=True))
            assert not wd.exists() and plain.is_dir()
        finally:
            await app.turns.aclose()


async def test_a_sha256_repository_is_clean_when_it_is(app: App, tmp_path: Path) -> None:
    root = tmp_path / "sha256"
    root.mkdir()
    (root / "a.txt").write_text(OLD)
    _git(root, "init", "-q", "--object-format=sha256")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    e = await _make(app, root, "E")
    assert (Path(app.parallel.record(e).worktree) / "a.txt").read_text() == OLD
    (root / "a.txt").write_text(A_TEXT)
    with pytest.raises(TandemError) as err:
        await _make(app, root, "F")
    assert err.value.data["dirty"] == ["a.txt"]


async def test_changes_on_both_sides_that_cannot_merge_keep_the_main_file(
        app: App, repo: Path) -> None:
    (repo / "x.txt").write_text("x\n")
    (repo / "y.txt").write_text("y\n")
    (repo / "bin.dat").write_bytes(b"\0binary\0")
    _git(repo, "add", "x.txt", "y.txt", "bin.dat")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "more")
    main = await new_session(app, repo)
    g = await _make(app, repo, "G", main)
    tree_g = Path(app.parallel.record(g).worktree)
    # Edited in the parallel tree by hand: its change is the tree against its base.
    (tree_g / "x.txt").write_text("x from G\n")
    (tree_g / "y.txt").unlink()
    (tree_g / "bin.dat").write_bytes(b"\0from G\0")
    (tree_g / "z.txt").write_text("z\nfrom G\n")
    # Meanwhile, in the main tree:
    (repo / "x.txt").unlink()
    (repo / "y.txt").write_text("y edited\n")
    (repo / "bin.dat").write_bytes(b"\0from main\0")
    (repo / "z.txt").write_text("z\nfrom main\n")
    before = tree(repo)
    done = await land(app, LandParams(session=g))
    assert done.outcome == "succeeded"
    assert sorted(done.kept) == ["bin.dat", "x.txt", "y.txt"] and done.conflicts == ["z.txt"]
    assert not (repo / "x.txt").exists() and (repo / "y.txt").read_text() == "y edited\n"
    assert (repo / "bin.dat").read_bytes() == b"\0from main\0"
    assert (repo / "z.txt").read_text() == (
        "z\n<<<<<<< main\nfrom main\n=======\nfrom G\n>>>>>>> tandem/G\n")
    plan = await app.rewinds.plan(main, done.turn)
    await app.rewinds.rewind(main, done.turn, plan.digest)
    assert tree(repo) == before
    await app.turns.aclose()


async def test_no_filter_hook_or_conversion_of_the_repository_runs(
        app: App, tmp_path: Path) -> None:
    """The repository's config names a smudge filter, .gitattributes uses it and asks
    for CRLF and ident, and a post-checkout hook exists: none of them runs; the
    worktree's files are the blobs' bytes, and its index is clean against them."""
    root = tmp_path / "hostile"
    root.mkdir()
    marker = tmp_path / "ran"
    (root / ".gitattributes").write_text("* filter=evil text eol=crlf ident\n")
    (root / "a.txt").write_text("$Id$\nline\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "filter.evil.smudge", f"sh -c 'touch {marker}; cat'")
    _git(root, "config", "filter.evil.required", "true")
    hook = root / ".git/hooks/post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    _git(root, "-c", "filter.evil.clean=cat", "add", "-A")
    _git(root, "-c", "filter.evil.clean=cat", "-c", "user.name=t", "-c", "user.email=t@t",
         "commit", "-qm", "init")
    h = await _make(app, root, "H")
    wh = Path(app.parallel.record(h).worktree)
    assert not marker.exists()
    assert (wh / "a.txt").read_bytes() == b"$Id$\nline\n"
    assert (wh / ".gitattributes").read_bytes() == b"* filter=evil text eol=crlf ident\n"
    # The worktree's index holds the commit: the tree it writes is the commit's tree.
    env_git = ["-c", "core.hooksPath=/dev/null"]
    assert _git(wh, *env_git, "write-tree").strip() == _git(root, "rev-parse",
                                                             "HEAD^{tree}").strip()
    assert app.parallel.patch(h).patch.files == []


async def test_a_committed_file_over_the_size_cap_is_a_gap_of_the_base(
        app: App, repo: Path) -> None:
    """The seeded index drops what a first capture would leave out: the file is in the
    worktree, not in the base checkpoint, and named as its gap."""
    (repo / "big.dat").write_bytes(b"b" * 5000)
    _git(repo, "add", "big.dat")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "big")
    app.checkpoints.size_cap = 1000
    s = await _make(app, repo, "S")
    record = app.parallel.record(s)
    wt = Path(record.worktree)
    assert (wt / "big.dat").read_bytes() == b"b" * 5000
    store = app.checkpoints.for_root(wt)
    base = store.get(record.base_checkpoint)
    assert "big.dat" not in store.paths(base) and "a.txt" in store.paths(base)
    assert [g.path for g in base.gaps] == ["big.dat"]
    assert "old.log" not in store.paths(base)  # committed but ignored: left out as ever


async def test_the_base_and_carried_checkpoints_hold_the_bytes_exactly(
        app: App, tmp_path: Path) -> None:
    """A file whose .gitattributes asks for a clean filter and eol conversion is in the
    base checkpoint byte for byte (CRLF kept, no filter run), and an untracked file that
    is not ignored, carried over, is in the carried checkpoint byte for byte."""
    root = tmp_path / "attrs"
    root.mkdir()
    marker = tmp_path / "cleaned"
    (root / ".gitignore").write_text("*.log\n")
    (root / "a.txt").write_bytes(b"one\r\ntwo\r\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "core.autocrlf", "false")
    # Committed before the attributes exist, so the blob keeps its CRLF.
    _git(root, "add", "-A")
    (root / ".gitattributes").write_text("*.txt filter=evil text eol=lf\n")
    _git(root, "-c", "filter.evil.clean=cat", "add", ".gitattributes")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    _git(root, "config", "filter.evil.clean", f"sh -c 'touch {marker}; tr a-z A-Z'")
    (root / "new.txt").write_bytes(b"new\r\nfile\r\n")
    (root / "skip.log").write_text("ignored\n")
    c = await _make(app, root, "C", carry=True)
    record = app.parallel.record(c)
    wt = Path(record.worktree)
    store = app.checkpoints.for_root(wt)
    base = store.get(record.base_checkpoint)
    blob = store.git.run(["cat-file", "blob", f"{base.tree}:a.txt"]).stdout
    committed = subprocess.run(["git", "cat-file", "blob", "HEAD:a.txt"], cwd=root,
                               check=True, capture_output=True).stdout
    assert blob == (wt / "a.txt").read_bytes() == committed == b"one\r\ntwo\r\n"
    assert record.carried_checkpoint is not None
    carried = store.get(record.carried_checkpoint)
    assert store.git.run(["cat-file", "blob", f"{carried.tree}:new.txt"]).stdout == \
        b"new\r\nfile\r\n"
    assert "skip.log" not in store.paths(carried)
    assert not marker.exists()
    await app.turns.aclose()
