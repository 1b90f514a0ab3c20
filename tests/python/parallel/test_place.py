"""``parallel/create``'s ``place``: a bad value, or a place that cannot be made, is
refused with a clear error before any file or branch is made."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from rewind.helpers import new_session
from tandem.adapters.parallel import create
from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.protocol.parallel import CreateParams
from tandem.remote.target_file import target_file
from tandem.turns.engine import run_blocking

pytestmark = pytest.mark.anyio


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def _branches(root: Path) -> str:
    return subprocess.run(["git", "branch", "--list"], cwd=root, check=True,
                          capture_output=True, text=True).stdout


@pytest.mark.parametrize("bad", ["", "Remote", "host", "../x", 1])
def test_a_bad_place_is_refused_by_the_model(bad: object) -> None:
    with pytest.raises(ValidationError, match="place"):
        CreateParams.model_validate({"project": "/p", "name": "A", "place": bad})


def test_place_defaults_to_auto() -> None:
    assert CreateParams(project="/p", name="A").place == "auto"


async def test_place_remote_without_an_agent_server_is_invalid(
        app: App, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    main = await new_session(app, repo)
    with pytest.raises(TandemError, match="no agent-server") as e:
        await create(app, CreateParams(project=str(repo), name="A", parent_session=main,
                                       place="remote"))
    assert e.value.code == "invalid"
    assert not (repo.parent / "proj.tandem-worktrees").exists()
    assert "tandem/" not in _branches(repo)


@pytest.mark.parametrize("place", ["auto", "remote"])
async def test_a_remote_main_session_is_made_on_its_host_never_locally(
        app: App, tmp_path: Path, place: str) -> None:
    # Its target file is damaged here: the host cannot be named, so nothing is made anywhere
    # (tests/python/remote/test_parallel_on_host.py makes them on a real host).
    repo = _repo(tmp_path)
    main = await new_session(app, repo)
    marker = target_file(app.parallel.home, main)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("{}")
    with pytest.raises(TandemError, match="damaged") as e:
        await create(app, CreateParams(project=str(repo), name="A", parent_session=main,
                                       place=place))  # type: ignore[arg-type]
    assert e.value.code == "corrupt"
    assert not (repo.parent / "proj.tandem-worktrees").exists()
    assert "tandem/" not in _branches(repo)
    # Best-of-N (made one after the other, here) refuses a host's session.
    with pytest.raises(TandemError, match="best-of-N on a host is not built") as e:
        await run_blocking(lambda: app.parallel.create(str(repo), "B", main, False, None))
    assert e.value.code == "unsupported"
    assert "tandem/" not in _branches(repo)


async def test_place_local_and_auto_make_a_local_tree(app: App, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    main = await new_session(app, repo)
    for name, place in (("A", "local"), ("B", "auto")):
        made = await create(app, CreateParams(project=str(repo), name=name,
                                              parent_session=main, place=place))  # type: ignore[arg-type]
        assert Path(made.record.worktree).is_dir()


@pytest.mark.parametrize("name", ["a/b", "..", "-rf", "a;touch PWNED", "a..b", "x.lock", ""])
async def test_the_service_refuses_a_name_that_is_not_one_component(
        app: App, tmp_path: Path, name: str) -> None:
    repo = _repo(tmp_path)
    main = await new_session(app, repo)
    for make in (lambda: app.parallel.make(str(repo), name, main, False, None),
                 lambda: run_blocking(lambda: app.parallel.create(str(repo), name, main,
                                                                  False, None))):
        with pytest.raises(TandemError) as e:
            await make()
        assert e.value.code == "invalid"
    assert not (repo.parent / "proj.tandem-worktrees").exists()
    assert "tandem/" not in _branches(repo)


def test_local_parallel_sessions_load_no_remote_code() -> None:
    # The host's side comes with the app's remote side, on first use.
    import sys
    code = ("import sys, tandem.parallel.service\n"
            "print(sorted(m for m in sys.modules if m.startswith('tandem.remote')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    assert out.strip() == "['tandem.remote', 'tandem.remote.target_file']"
