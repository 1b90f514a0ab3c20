"""The registry and the append-only log: crash-safe, torn-tail tolerant, locked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tandem.directives.log import Registry, WorkspaceLog
from tandem.protocol.base import TandemError


def test_registry_keys_by_canonical_root(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = tmp_path / "proj"
    root.mkdir()
    link = tmp_path / "link"
    link.symlink_to(root)
    reg = Registry(home)
    wid = reg.ensure(str(root))
    assert reg.ensure(str(link)) == wid and reg.ensure(str(root) + "/") == wid
    assert reg.root_of(wid) == str(root.resolve())
    assert not list(root.iterdir())  # nothing is written into the project
    other = tmp_path / "other"
    other.mkdir()
    assert reg.ensure(str(other)) != wid
    for bad in ("relative/dir", "", str(tmp_path / "missing")):
        with pytest.raises(TandemError):
            reg.ensure(bad)


def test_corrupt_registry_is_reported(tmp_path: Path) -> None:
    reg = Registry(tmp_path / "home")
    reg.dir.mkdir(parents=True)
    reg.path.write_text("{not json")
    with pytest.raises(TandemError, match="unreadable"):
        reg.lookup(str(tmp_path))


def test_torn_tail_is_ignored_then_set_aside(tmp_path: Path) -> None:
    log = WorkspaceLog(tmp_path, "w1")
    log.append("directive_created", {"directive": "D1", "request": "r"})
    with open(log.path, "ab") as f:
        f.write(b'{"kind":"archived","seq":2,"ts"')  # a crash mid-write
    events = log.read()
    assert [e.seq for e in events] == [1] and "incomplete last line" in log.notices[0]
    log.append("archived", {"directive": "D1", "archived": True})
    assert [e.seq for e in log.read()] == [1, 2]
    (aside,) = log.dir.glob("w1.torn-*.part")
    assert aside.read_bytes() == b'{"kind":"archived","seq":2,"ts"'
    assert log.path.read_bytes().endswith(b"\n")


def test_bad_middle_line_is_kept_and_skipped(tmp_path: Path) -> None:
    log = WorkspaceLog(tmp_path, "w1")
    log.append("a", {})
    with open(log.path, "ab") as f:
        f.write(b"garbage\n")
    log.append("b", {})
    assert [e.kind for e in log.read()] == ["a", "b"]
    assert b"garbage" in log.path.read_bytes() and "line 2" in log.notices[-1]


def test_bad_workspace_ids(tmp_path: Path) -> None:
    for bad in ("", "../x", ".hidden"):
        with pytest.raises(TandemError):
            WorkspaceLog(tmp_path, bad)


SCRIPT = """
import sys
from pathlib import Path
from tandem.directives.log import WorkspaceLog
from tandem.directives.state import next_directive_id
log = WorkspaceLog(Path(sys.argv[1]), "w1")
for _ in range(25):
    log.append_many([], lambda ev: [("directive_created", {"directive": next_directive_id(ev)})])
"""


def test_concurrent_writers_never_collide(tmp_path: Path) -> None:
    """Four processes allocate ids at once: every id and seq is unique, every line whole."""
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path)]) for _ in range(4)]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    lines = (tmp_path / "workspaces" / "w1.jsonl").read_text().splitlines()
    data = [json.loads(x) for x in lines]
    assert [d["seq"] for d in data] == list(range(1, 101))
    assert sorted(int(d["directive"][1:]) for d in data) == list(range(1, 101))
