"""Parallel sessions on the real openhands-agent-server: made, run, landed, rewound, removed.

The host is the agent-server on this machine, so its files are read here
directly: that is the evidence (the worktree and branches in the host's
repository, the files there), not what tandem says about itself.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem.adapters.parallel import create, land, patch, remove
from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.protocol.parallel import CreateParams, LandParams, RemoveParams, SessionParams
from tandem.providers.base import PermissionRequest

from .agent_server import RunningServer, serve_for_tests
from .engine_helpers import agent_script, answering, attached_session, chat, configure, entries
from .engine_helpers import run_command as run

pytestmark = pytest.mark.anyio

OLD = "".join(f"line {i}\n" for i in range(1, 11))
IDENT = ["-c", "user.name=t", "-c", "user.email=t@t"]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    yield from serve_for_tests("tandem-parallel-host", "parallel sessions on a host")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


def _host_repo(wd: Path) -> None:
    """The host's project: a repository with one commit and a branch of the user's."""
    (wd / "a.txt").write_text(OLD)
    (wd / "b.txt").write_text("b\n")
    _git(wd, "init", "-q", "-b", "main")
    _git(wd, "add", "-A")
    _git(wd, *IDENT, "commit", "-qm", "init")
    _git(wd, "branch", "feature")


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def _branches(wd: Path) -> list[str]:
    return _git(wd, "branch", "--format=%(refname:short)").split()


async def _make(app: App, project: Path, name: str, main: str, carry: bool = False) -> str:
    made = await create(app, CreateParams(project=str(project), name=name,
                                          parent_session=main, carry=carry))
    return made.record.session


@pytest.mark.parametrize("name", ["a/b", "..", "-rf", "a;touch PWNED", "$(touch PWNED)",
                                  "a..b", "x.lock"])
async def test_a_hostile_name_makes_nothing_on_the_host(server: RunningServer, app: App,
                                                        project: Path, name: str) -> None:
    with FakeOpenAI(agent_script(Reply(text="never"))) as fake:
        configure(app, server, fake)
        main, wd_s = await attached_session(app, project, server)
        wd = Path(wd_s)
        _host_repo(wd)
        with pytest.raises(TandemError) as e:  # the service itself checks, past the model
            await app.parallel.make(str(project), name, main, False, None)
        assert e.value.code == "invalid"
        assert not Path(wd_s + ".tandem-worktrees").exists()
        assert _branches(wd) == ["feature", "main"]
        assert not list(wd.parent.rglob("PWNED")) and not list(project.rglob("PWNED"))
    await app.turns.aclose()


async def test_create_run_land_rewind_remove_on_the_host(server: RunningServer, app: App,
                                                         project: Path) -> None:
    theirs = OLD.replace("line 2\n", "line 2 from A\n")
    script = agent_script(
        run(f"printf '{theirs}' > a.txt && echo new > new.txt"), Reply(text="A done"),
        Reply(text="B said nothing"))
    with FakeOpenAI(script) as fake:
        configure(app, server, fake)
        main, wd_s = await attached_session(app, project, server)
        wd = Path(wd_s)
        _host_repo(wd)
        head = _git(wd, "rev-parse", "HEAD").strip()
        a = await _make(app, project, "A", main)
        b = await _make(app, project, "B", main)
        ra = app.parallel.record(a)
        ta, tb = Path(wd_s + ".tandem-worktrees/A"), Path(wd_s + ".tandem-worktrees/B")
        # The worktree and branch are made on the host, from its HEAD.
        assert ra.worktree == str(ta) and ra.host == "box" and ra.kind == "worktree"
        assert ra.branch == "tandem/A" and ra.base_commit == head and ra.remote_root == wd_s
        assert _branches(wd) == ["feature", "main", "tandem/A", "tandem/B"]
        assert str(ta) in _git(wd, "worktree", "list", "--porcelain")
        assert _git(ta, "symbolic-ref", "HEAD").strip() == "refs/heads/tandem/A"
        assert (ta / "a.txt").read_text() == OLD and (ta / ".git").is_file()
        target = app.remote.target(a)
        assert target is not None and target.resolved_working_dir == str(ta)
        assert ra.mirror and not Path(ra.mirror).is_relative_to(project)
        # A turn of A edits its tree only.
        main_before, b_before = _files(wd), _files(tb)
        asked: list[PermissionRequest] = []
        ended = await chat(app, a, "edit in A", answering("allow_once", asked))
        assert ended.outcome == "succeeded", ended.error
        assert (ta / "a.txt").read_text() == theirs and (ta / "new.txt").read_text() == "new\n"
        assert _files(wd) == main_before and _files(tb) == b_before
        shown = await patch(app, SessionParams(session=a))
        assert sorted(f.path for f in shown.patch.files) == ["a.txt", "new.txt"]
        assert shown.host == "box" and shown.worktree == str(ta) and shown.root == ra.mirror
        summary = app.parallel.summaries()[a]
        assert (summary.host, summary.files, summary.state) == ("box", 2, "ready")
        # The main tree moves meanwhile (line 9): the landing merges three ways.
        (wd / "a.txt").write_text(OLD.replace("line 9\n", "line 9 from main\n"))
        before_land = _files(wd)
        landed = await land(app, LandParams(session=a))
        assert landed.outcome == "succeeded", landed.error
        assert landed.session == main and sorted(landed.written) == ["a.txt", "new.txt"]
        assert not landed.conflicts
        assert (wd / "a.txt").read_text() == theirs.replace("line 9\n", "line 9 from main\n")
        assert (wd / "new.txt").read_text() == "new\n"
        assert _files(tb) == b_before
        log = entries(app, main)
        starts = [e for e in log if e["type"] == "turn_start"]
        assert [s["provider"] for s in starts] == ["tandem:land"]  # one turn of the main one
        # Rewind of the landing restores the host's main tree byte for byte.
        plan = await app.rewinds.plan(main, landed.turn)
        await app.rewinds.rewind(main, landed.turn, plan.digest)
        assert _files(wd) == before_land
        assert app.parallel.record(a).landed == []
        # Removal: A's change is no longer landed, so it asks; forced, only A goes.
        with pytest.raises(TandemError) as e:
            await remove(app, RemoveParams(session=a))
        assert e.value.code == "conflict"
        done = await remove(app, RemoveParams(session=a, force=True))
        assert done.removed
        assert not ta.exists() and tb.is_dir() and _files(tb) == b_before
        assert _branches(wd) == ["feature", "main", "tandem/B"]
        assert str(ta) not in _git(wd, "worktree", "list", "--porcelain")
        assert _files(wd) == before_land
        # B, never changed, is removed without asking.
        await remove(app, RemoveParams(session=b))
        assert _branches(wd) == ["feature", "main"]
        assert not tb.exists()
    await app.turns.aclose()


async def test_uncommitted_changes_on_the_host_are_refused_or_carried(
        server: RunningServer, app: App, project: Path) -> None:
    with FakeOpenAI(agent_script(Reply(text="never"))) as fake:
        configure(app, server, fake)
        main, wd_s = await attached_session(app, project, server)
        wd = Path(wd_s)
        _host_repo(wd)
        (wd / "b.txt").write_text("b edited\n")
        (wd / "extra.txt").write_text("untracked\n")
        with pytest.raises(TandemError) as e:
            await _make(app, project, "A", main)
        assert e.value.code == "conflict" and e.value.data["dirty"] == ["b.txt", "extra.txt"]
        # Refused: nothing stays on the host.
        assert not Path(wd_s + ".tandem-worktrees/A").exists()
        assert _branches(wd) == ["feature", "main"]
        a = await _make(app, project, "A", main, carry=True)
        ta = Path(wd_s + ".tandem-worktrees/A")
        assert (ta / "b.txt").read_text() == "b edited\n"
        assert (ta / "extra.txt").read_text() == "untracked\n"
        record = app.parallel.record(a)
        assert record.carried_checkpoint is not None
        # The main tree keeps its changes.
        assert (wd / "b.txt").read_text() == "b edited\n"
    await app.turns.aclose()


async def test_a_non_git_root_gets_a_copy_and_removal_removes_only_it(
        server: RunningServer, app: App, project: Path) -> None:
    with FakeOpenAI(agent_script(Reply(text="never"))) as fake:
        configure(app, server, fake)
        main, wd_s = await attached_session(app, project, server)
        wd = Path(wd_s)
        (wd / "a.txt").write_text(OLD)
        a = await _make(app, project, "C", main)
        record = app.parallel.record(a)
        tc = Path(wd_s + ".tandem-worktrees/C")
        assert record.kind == "copy" and record.branch is None
        assert _files(tc) == _files(wd)
        await remove(app, RemoveParams(session=a))
        assert not tc.exists() and _files(wd) == {"a.txt": OLD.encode()}
    await app.turns.aclose()


async def test_a_host_tree_is_not_landed_into_a_main_session_run_elsewhere(
        server: RunningServer, app: App, project: Path) -> None:
    with FakeOpenAI(agent_script(Reply(text="never"))) as fake:
        configure(app, server, fake)
        main, wd_s = await attached_session(app, project, server)
        (Path(wd_s) / "a.txt").write_text(OLD)
        a = await _make(app, project, "D", main)
        (Path(wd_s + ".tandem-worktrees/D") / "a.txt").write_text("changed\n")
        assert app.remote.detach(main)
        with pytest.raises(TandemError, match="not built") as e:
            await land(app, LandParams(session=a))
        assert e.value.code == "unsupported"
        assert (project / "a.txt").exists() is False and (Path(wd_s) / "a.txt").read_text() == OLD
        assert not [e for e in entries(app, main) if e["type"] == "turn_start"]
    await app.turns.aclose()


async def test_a_conflict_is_written_on_the_host_with_markers_and_rewound(
        server: RunningServer, app: App, project: Path) -> None:
    with FakeOpenAI(agent_script(Reply(text="never"))) as fake:
        configure(app, server, fake)
        main, wd_s = await attached_session(app, project, server)
        wd = Path(wd_s)
        _host_repo(wd)
        a = await _make(app, project, "E", main)
        te = Path(wd_s + ".tandem-worktrees/E")
        # Changed on the host directly: the landing syncs the tree's mirror first.
        (te / "a.txt").write_text(OLD.replace("line 5\n", "line 5 from E\n"))
        (te / "b.txt").unlink()
        (te / "tool.sh").write_text("#!/bin/sh\n")
        (te / "tool.sh").chmod(0o755)
        (wd / "a.txt").write_text(OLD.replace("line 5\n", "line 5 from main\n"))
        before = _files(wd)
        landed = await land(app, LandParams(session=a))
        assert landed.outcome == "succeeded", landed.error
        assert landed.conflicts == ["a.txt"] and landed.deleted == ["b.txt"]
        assert landed.written == ["tool.sh"]
        text = (wd / "a.txt").read_text()
        assert "<<<<<<< main\nline 5 from main\n" in text and ">>>>>>> tandem/E\n" in text
        assert not (wd / "b.txt").exists()
        assert (wd / "tool.sh").stat().st_mode & 0o100  # its execute bit too
        plan = await app.rewinds.plan(main, landed.turn)
        await app.rewinds.rewind(main, landed.turn, plan.digest)
        assert _files(wd) == before
    await app.turns.aclose()


async def test_an_existing_branch_or_a_second_creation_at_once_takes_nothing_over(
        server: RunningServer, app: App, project: Path) -> None:
    import asyncio
    with FakeOpenAI(agent_script(Reply(text="never"))) as fake:
        configure(app, server, fake)
        main, wd_s = await attached_session(app, project, server)
        wd = Path(wd_s)
        _host_repo(wd)
        _git(wd, "branch", "tandem/mine")
        mine = _git(wd, "rev-parse", "tandem/mine")
        with pytest.raises(TandemError, match="exists already") as e:
            await _make(app, project, "mine", main)
        assert e.value.code == "exists"
        assert _git(wd, "rev-parse", "tandem/mine") == mine
        assert not Path(wd_s + ".tandem-worktrees/mine").exists()
        # Two creations of one name at once: one tree, and the loser removes nothing of it.
        got = await asyncio.gather(_make(app, project, "F", main),
                                   _make(app, project, "F", main), return_exceptions=True)
        errors = [g for g in got if isinstance(g, TandemError)]
        made = [g for g in got if isinstance(g, str)]
        assert len(made) == 1 and [x.code for x in errors] == ["exists"], got
        tf = Path(wd_s + ".tandem-worktrees/F")
        assert (tf / "a.txt").read_text() == OLD
        assert "tandem/F" in _branches(wd)
        assert _git(tf, "symbolic-ref", "HEAD").strip() == "refs/heads/tandem/F"
    await app.turns.aclose()


async def test_a_tree_removed_by_hand_loses_only_its_own_record_in_git(
        server: RunningServer, app: App, project: Path) -> None:
    import shutil
    with FakeOpenAI(agent_script(Reply(text="never"))) as fake:
        configure(app, server, fake)
        main, wd_s = await attached_session(app, project, server)
        wd = Path(wd_s)
        _host_repo(wd)
        # The user's own worktree, also removed by hand: git keeps its record until a prune.
        _git(wd, "worktree", "add", "-q", "-b", "users", str(wd.parent / "users-tree"))
        shutil.rmtree(wd.parent / "users-tree")
        a = await _make(app, project, "G", main)
        shutil.rmtree(wd_s + ".tandem-worktrees/G")
        await remove(app, RemoveParams(session=a, force=True))
        listed = _git(wd, "worktree", "list", "--porcelain")
        assert "users-tree" in listed and "tandem-worktrees/G" not in listed
        assert _branches(wd) == ["feature", "main", "users"]
    await app.turns.aclose()


async def test_the_parallel_sessions_own_checkpoints_rewind_its_tree_only(
        server: RunningServer, app: App, project: Path) -> None:
    import time
    script = agent_script(run("echo mine > x.txt && printf 'changed\\n' > b.txt"),
                          Reply(text="done"))
    with FakeOpenAI(script) as fake:
        configure(app, server, fake)
        main, wd_s = await attached_session(app, project, server)
        wd = Path(wd_s)
        _host_repo(wd)
        started = time.monotonic()
        a = await _make(app, project, "H", main)
        print(f"\nparallel/create on the host: {time.monotonic() - started:.2f} s")
        th = Path(wd_s + ".tandem-worktrees/H")
        tree_before, main_before = _files(th), _files(wd)
        ended = await chat(app, a, "write", answering("allow_once", []))
        assert ended.outcome == "succeeded", ended.error
        assert (th / "x.txt").read_text() == "mine\n"
        # Its checkpoints are of its own mirror, not the main session's.
        own = app.remote_checkpoints.mirror(a).root
        assert own != app.remote_checkpoints.mirror(main).root
        assert (own / "x.txt").read_text() == "mine\n"
        plan = await app.rewinds.plan(a, 1)
        await app.rewinds.rewind(a, 1, plan.digest)
        assert _files(th) == tree_before and _files(wd) == main_before
    await app.turns.aclose()
