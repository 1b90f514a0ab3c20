"""Private state: TANDEM_HOME and its folders 0700, files 0600, tightened on start, in doctor."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec

from tandem.store import fsutil
from tandem.store.home import PRIVATE_MARKER

from .modes import loose as _loose

REPO = Path(__file__).resolve().parents[3]


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "a.txt").write_text("old\n")
    (root / ".env").write_text("SECRET_IN_DOTENV=1\n")  # untracked: checkpoints copy it
    return root


def test_state_written_by_a_real_turn_is_private_under_a_loose_umask(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    # No start-up walk: what is checked below was created private, not fixed.
    (home / PRIVATE_MARKER).write_text("")
    (home / PRIVATE_MARKER).chmod(0o600)
    root = _project(tmp_path)
    script = [Reply(text="Editing.", tool_calls=[ToolCallSpec(
        name="edit_file", input={"path": "a.txt", "old_text": "old", "new_text": "new"})]),
        Reply(text="Done.")]
    env = dict(os.environ, TANDEM_HOME=str(home))
    with FakeOpenAI(script) as fake:
        env.update(OPENAI_BASE_URL=fake.base_url + "/v1", OPENAI_API_KEY="sk-private")
        out = subprocess.run(
            [sys.executable, "-m", "tandem.cli", "ask", "--cwd", str(root), "--provider",
             "openai:m", "--permission-mode", "auto-edit", "edit a.txt"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, cwd=REPO,
            timeout=120, umask=0o022)
    assert out.returncode == 0, out.stderr
    assert (root / "a.txt").read_text() == "new\n"
    # The user's own file keeps the user's umask: only tandem's state is private.
    assert stat.S_IMODE((root / "a.txt").stat().st_mode) == 0o644
    assert list((home / "checkpoints").rglob("objects/??/*")), "the turn made a checkpoint"
    assert list((home / "sessions").rglob("*.jsonl"))
    assert _loose(home) == [], '\n'.join(_loose(home))
    # A backend start writes its log too.
    serve = subprocess.Popen([sys.executable, "-m", "tandem.cli", "serve"], env=env, cwd=REPO,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, umask=0o022)
    assert serve.stdin is not None and serve.stdout is not None
    serve.stdin.write(json.dumps({"token": "t"}).encode() + b"\n")
    serve.stdin.flush()
    assert serve.stdout.readline().strip().isdigit()
    serve.stdin.close()
    assert serve.wait(10) == 0
    assert (home / "logs" / "backend.log").exists()
    assert _loose(home) == [], '\n'.join(_loose(home))


def test_a_loose_home_is_tightened_when_the_backend_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "sessions" / "old").mkdir(parents=True)
    journal = home / "sessions" / "old" / "x.jsonl"
    journal.write_text("{}\n")
    for path, mode in ((home, 0o755), (home / "sessions", 0o755),
                       (home / "sessions" / "old", 0o775), (journal, 0o644)):
        path.chmod(mode)
    outside = tmp_path / "outside.txt"
    outside.write_text("not ours")
    outside.chmod(0o644)
    (home / "link").symlink_to(outside)  # never followed
    env = dict(os.environ, TANDEM_HOME=str(home))
    serve = subprocess.Popen([sys.executable, "-m", "tandem.cli", "serve"], env=env, cwd=REPO,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    assert serve.stdin is not None and serve.stdout is not None
    serve.stdin.write(b'{"token": "t"}\n')
    serve.stdin.flush()
    assert serve.stdout.readline().strip().isdigit()
    try:
        # The home itself at once; what is below it in the background.
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        deadline = time.monotonic() + 10
        while _loose(home) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _loose(home) == [], '\n'.join(_loose(home))
        assert stat.S_IMODE(outside.stat().st_mode) == 0o644
        assert (home / PRIVATE_MARKER).exists()
    finally:
        serve.stdin.close()
        serve.wait(10)


def test_doctor_reports_loose_modes_with_path_and_mode(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / "checkpoints" / "w"
    folder.mkdir(parents=True)
    home.chmod(0o700)
    (home / "checkpoints").chmod(0o700)
    folder.chmod(0o755)
    (folder / "obj").write_text("copy of .env")
    (folder / "obj").chmod(0o644)
    env = dict(os.environ, TANDEM_HOME=str(home))
    out = subprocess.run([sys.executable, "-m", "tandem.cli", "doctor", "--json"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    check = next(c for c in json.loads(out.stdout) if c["name"] == "private state")
    assert not check["ok"]
    assert f"{folder} 0755" in check["detail"]
    assert f"{folder / 'obj'} 0644" in check["detail"]
    assert out.returncode == 1
    # Doctor reports; it does not change anything.
    assert stat.S_IMODE((folder / "obj").stat().st_mode) == 0o644


def test_private_dir_makes_every_missing_level_private(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c"
    old = os.umask(0o022)
    try:
        fsutil.private_dir(target)
        fsutil.atomic_write(target / "f", b"x")
    finally:
        os.umask(old)
    for path in (tmp_path / "a", tmp_path / "a" / "b", target):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert stat.S_IMODE((target / "f").stat().st_mode) == 0o600


def test_tighten_stops_at_its_bound_and_says_so(tmp_path: Path) -> None:
    for i in range(10):
        (tmp_path / f"f{i}").write_text("x")
        (tmp_path / f"f{i}").chmod(0o644)
    changed, complete = fsutil.tighten_tree(tmp_path, limit=5)
    assert not complete and changed <= 5
    changed, complete = fsutil.tighten_tree(tmp_path)
    assert complete and fsutil.loose_entries(tmp_path) == ([], True)


def _loosened(tmp_path: Path) -> tuple[Path, Path]:
    """A home an older version left open (folders 0755/0775, files 0644/0664), and a
    file outside it that a symlink in the home points to."""
    home = tmp_path / "home"
    slug = home / "sessions" / "proj-0123"
    (slug / "20260101T000000Z_x").mkdir(parents=True)
    (slug / "20260101T000000Z_x.jsonl").write_text("{}\n")
    (slug / ".summaries.json").write_text("{}")
    (home / "checkpoints" / "w").mkdir(parents=True)
    (home / "checkpoints" / "w" / "maintained").write_text("")
    (home / PRIVATE_MARKER).write_text("")  # an older walk's marker does not stop --fix
    for path in [home, *home.rglob("*")]:
        path.chmod(0o775 if path.is_dir() else 0o664)
    outside = tmp_path / "outside.txt"
    outside.write_text("not tandem's")
    outside.chmod(0o644)
    (home / "link").symlink_to(outside)
    return home, outside


def test_doctor_names_loose_state_too_open_and_fix_makes_it_private(tmp_path: Path) -> None:
    home, outside = _loosened(tmp_path)
    env = dict(os.environ, TANDEM_HOME=str(home))
    plain = subprocess.run([sys.executable, "-m", "tandem.cli", "doctor"], capture_output=True,
                           text=True, env=env, cwd=tmp_path, timeout=60)
    [line] = [x for x in plain.stdout.splitlines() if "private state" in x]
    assert line.startswith("TOO OPEN") and "too open" in line and "doctor --fix" in line
    assert "MISSING" not in line
    assert plain.returncode == 1
    assert fsutil.loose_entries(home)[0], "plain doctor changes nothing"
    # What Emacs shows: every required part is there; some are too open.
    data = subprocess.run(
        [sys.executable, "-c", "import json; from tandem.doctor import report_data; "
         "print(json.dumps(report_data()))"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    report = json.loads(data.stdout)
    check = next(c for c in report["checks"] if c["name"] == "private state")
    assert report["too_open"] is True and check["too_open"] and not check["ok"]
    others = [c for c in report["checks"] if c["required"] and c is not check]
    assert report["ok"] == all(c["ok"] for c in others)  # too open is not missing

    fixed = subprocess.run([sys.executable, "-m", "tandem.cli", "doctor", "--fix"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert "fixed: made 9 entries" in fixed.stdout, fixed.stdout
    [line] = [x for x in fixed.stdout.splitlines() if "private state" in x]
    assert line.startswith("ok")
    assert _loose(home) == [], "\n".join(_loose(home))
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644  # the link was not followed
    again = subprocess.run([sys.executable, "-m", "tandem.cli", "doctor", "--fix"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert "fixed: made 0 entries" in again.stdout
