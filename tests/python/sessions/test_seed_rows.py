"""One test per row of the entry-path table (docs/sessions.md), driving the real CLI.

Rows with a prompt run on a real pseudo-terminal with the answer typed at the
prompt; the no-terminal row runs with stdin on /dev/null. Each asserts
identity, journal location, header cwd, active directory and, where nothing
moved, that the original journal is byte-for-byte intact. Applied settings are
asserted in-process in test_seed_rows_manager.py (the CLI's JSON object keeps
to its fixed keys).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tandem.store import layout
from tandem.store.journal import Journal, read_header

from .conftest import PROMPT_END, Cli

CANCELLED = "Resume cancelled: session was not moved."
KEYS = {"id", "path", "cwd", "active_cwd", "relocated", "previous_files"}


def make_session(cli: Cli, cwd: Path, title: str = "work") -> dict:
    """A session with two entries and an artifact file, created via the CLI."""
    info = cli.run(["sessions", "new", "--cwd", str(cwd), "--title", title, "--json"], cwd).json()
    with Journal.open(Path(info["path"])) as j:
        j.append({"type": "user", "turn": 1, "text": "hello"})
        j.append({"type": "assistant", "turn": 1, "text": "hi"})
        j.artifacts_dir.mkdir(exist_ok=True)
        (j.artifacts_dir / "blob.txt").write_text("artifact")
    return info


def test_resume_id_recorded_cwd_exists(cli: Cli, project) -> None:
    """Row 1: startup resume ID, cwd exists -> open it, adopt its project."""
    a, b = project("a"), project("b")
    s = make_session(cli, a)
    before = Path(s["path"]).read_bytes()
    for run in (
        lambda: cli.run(["resume", s["id"][:8], "--json"], b),
        lambda: cli.pty(["resume", s["id"][:8], "--json"], b, []),
    ):
        r = run()
        assert r.code == 0, r.err
        out = r.json()
        assert set(out) == KEYS
        assert out["id"] == s["id"]
        assert out["path"] == s["path"]
        assert out["cwd"] == str(a) and out["active_cwd"] == str(a)
        assert out["relocated"] is False and out["previous_files"] == []
        assert PROMPT_END not in r.err
    assert Path(s["path"]).read_bytes() == before


def _gone(cli: Cli, project) -> tuple[dict, Path, Path, bytes]:
    a, b = project("a"), project("b")
    s = make_session(cli, a)
    before = Path(s["path"]).read_bytes()
    shutil.rmtree(a)
    return s, a, b, before


def _assert_relocated(out: dict, s: dict, a: Path, b: Path, home: Path) -> None:
    assert out["id"] == s["id"]
    assert out["relocated"] is True
    assert out["cwd"] == str(b) and out["active_cwd"] == str(b)
    assert out["previous_files"] == [s["path"]]
    new = Path(out["path"])
    assert new.parent == layout.slug_dir(home, str(b))
    assert new.name == Path(s["path"]).name
    assert not Path(s["path"]).exists()
    assert not layout.artifacts_dir(Path(s["path"])).exists()
    assert (layout.artifacts_dir(new) / "blob.txt").read_text() == "artifact"
    header, _ = read_header(new)
    assert header.cwd == str(b) and header.id == s["id"]
    with Journal.open(new, writable=False) as j:
        assert [e.text for e in j.entries()] == ["hello", "hi"]  # type: ignore[attr-defined]
    # Not a fork: exactly one journal carries this id.
    assert len(list(home.glob(f"sessions/*/*{s['id']}.jsonl"))) == 1


def test_resume_id_cwd_gone_yes(cli: Cli, project, home: Path) -> None:
    """Row 2 (typed yes): re-root the same session into the launch directory."""
    s, a, b, _ = _gone(cli, project)
    r = cli.pty(["resume", s["id"], "--json"], b, [(PROMPT_END, "y")])
    assert r.code == 0, r.err
    question = (
        f"Session's directory no longer exists ({a}). "
        "Move (re-root) it into the current directory? [Y/n] "
    )
    assert question in r.err.replace("<", "").replace(">", "")
    _assert_relocated(r.json(), s, a, b, home)


def test_resume_id_cwd_gone_default_answer(cli: Cli, project, home: Path) -> None:
    """Row 2 (empty answer = default = yes)."""
    s, a, b, _ = _gone(cli, project)
    r = cli.pty(["resume", s["id"][:10], "--json"], b, [(PROMPT_END, "")])
    assert r.code == 0, r.err
    _assert_relocated(r.json(), s, a, b, home)


def test_resume_id_cwd_gone_no(cli: Cli, project, home: Path) -> None:
    """Row 3: No cancels; nothing opens, nothing moves, no new session."""
    s, a, b, before = _gone(cli, project)
    r = cli.pty(["resume", s["id"], "--json"], b, [(PROMPT_END, "n")])
    assert r.code == 0
    assert r.out == CANCELLED + "\n"
    assert Path(s["path"]).read_bytes() == before
    assert (layout.artifacts_dir(Path(s["path"])) / "blob.txt").read_text() == "artifact"
    assert layout.iter_journals(layout.slug_dir(home, str(b))) == []


def test_resume_id_cwd_gone_no_tty(cli: Cli, project, home: Path) -> None:
    """Row 4: no terminal -> fail with an instruction to run interactively."""
    s, a, b, before = _gone(cli, project)
    r = cli.run(["resume", s["id"], "--json"], b)
    assert r.code == 1
    assert "interactively" in r.err and s["id"] in r.err
    assert r.out == ""
    assert Path(s["path"]).read_bytes() == before
    assert layout.iter_journals(layout.slug_dir(home, str(b))) == []


def test_resume_path_cwd_gone(cli: Cli, project) -> None:
    """Row 5: direct path opening never asks, never moves; active cwd = launch dir."""
    s, a, b, before = _gone(cli, project)
    for run in (
        lambda: cli.run(["resume", s["path"], "--json"], b),
        lambda: cli.pty(["resume", s["path"], "--json"], b, []),
    ):
        r = run()
        assert r.code == 0, r.err
        out = r.json()
        assert PROMPT_END not in r.err
        assert out["id"] == s["id"] and out["path"] == s["path"]
        assert out["cwd"] == str(a)  # the recorded cwd is retained
        assert out["active_cwd"] == str(b)
        assert out["relocated"] is False
    assert Path(s["path"]).read_bytes() == before


def test_picker_selects_session_with_missing_cwd(cli: Cli, project) -> None:
    """Row 7: the picker's direct-open path: launch-cwd fallback, no relocation."""
    s, a, b, before = _gone(cli, project)
    c = project("c")
    make_session(cli, c, title="other")
    # The lost session was created first, so it is listed second.
    r = cli.pty(["resume", "--json"], b, [("Resume which session?", "2")])
    assert r.code == 0, r.err
    out = r.json()
    assert PROMPT_END not in r.err
    assert out["id"] == s["id"] and out["path"] == s["path"]
    assert out["cwd"] == str(a) and out["active_cwd"] == str(b)
    assert out["relocated"] is False
    assert Path(s["path"]).read_bytes() == before


def test_picker_without_terminal_refuses(cli: Cli, project) -> None:
    """The picker needs a terminal too."""
    s, a, b, _ = _gone(cli, project)
    r = cli.run(["resume", "--json"], b)
    assert r.code == 1 and "interactively" in r.err


def test_continue_source_gone_destination_empty(cli: Cli, project, home: Path) -> None:
    """Row 8: continue re-roots the breadcrumb's session automatically."""
    s, a, b, _ = _gone(cli, project)
    r = cli.run(["continue", "--json"], b)
    assert r.code == 0, r.err
    _assert_relocated(r.json(), s, a, b, home)


def test_continue_destination_has_history(cli: Cli, project, home: Path) -> None:
    """Row 9: the destination's own session wins over the vanished project's."""
    a, b = project("a"), project("b")
    own = make_session(cli, b, title="b's own")
    lost = make_session(cli, a, title="lost")  # the breadcrumb now points here
    before = Path(lost["path"]).read_bytes()
    shutil.rmtree(a)
    r = cli.run(["continue", "--json"], b)
    assert r.code == 0, r.err
    out = r.json()
    assert out["id"] == own["id"] and out["path"] == own["path"]
    assert out["relocated"] is False and out["active_cwd"] == str(b)
    assert Path(lost["path"]).read_bytes() == before


def test_list_and_new_json(cli: Cli, project) -> None:
    """`sessions list` shows this project's sessions; --all shows every project."""
    a, b = project("a"), project("b")
    sa = make_session(cli, a, "in a")
    sb = make_session(cli, b, "in b")
    here = json.loads(cli.run(["sessions", "list", "--json"], a).out)
    assert [r["id"] for r in here] == [sa["id"]]
    every = json.loads(cli.run(["sessions", "list", "--all", "--json"], a).out)
    assert {r["id"] for r in every} == {sa["id"], sb["id"]}
    assert every[0]["last_seq"] == 2
    text = cli.run(["sessions", "list", "--all"], a).out
    assert "in a" in text and "in b" in text


def test_resume_unknown_and_ambiguous(cli: Cli, project) -> None:
    """Unknown ids and bad input fail clearly with exit 1."""
    a = project("a")
    make_session(cli, a)
    r = cli.run(["resume", "ffffffff"], a)
    assert r.code == 1 and "No session" in r.err
    r = cli.run(["resume", "not an id!"], a)
    assert r.code == 1 and "Not a session id" in r.err
    make_session(cli, a)
    r = cli.run(["resume", "0"], a)  # two UUIDv7 ids of this minute share their start
    assert r.code == 1 and "sessions start with" in r.err
    r = cli.run(["resume", str(a / "nope.jsonl")], a)
    assert r.code == 1 and "No session journal" in r.err


def test_picker_cancel_and_bad_choice(cli: Cli, project) -> None:
    """An empty picker answer cancels (exit 0); a bad number fails (exit 1)."""
    a = project("a")
    s = make_session(cli, a)
    r = cli.pty(["resume"], a, [("Resume which session?", "")])
    assert r.code == 0 and r.out.strip() == "Resume cancelled: no session selected."
    r = cli.pty(["resume"], a, [("Resume which session?", "7")])
    assert r.code == 1 and "Not a number between 1 and 1" in r.err
    r = cli.pty(["resume"], a, [("Resume which session?", "1")])
    assert r.code == 0 and s["id"] in r.out


def test_new_rejects_missing_directory(cli: Cli, project, tmp_path: Path) -> None:
    """`sessions new --cwd` of a missing directory fails clearly."""
    a = project("a")
    r = cli.run(["sessions", "new", "--cwd", str(tmp_path / "missing"), "--json"], a)
    assert r.code == 1 and "Not a directory" in r.err and r.out == ""
