"""One writer per journal across real processes; kill -9 at random points."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tandem.protocol.base import TandemError
from tandem.sessions.relocate import relocate
from tandem.store import layout
from tandem.store.journal import Journal
from tandem.store.lock import is_locked, read_holder

from .conftest import REPO

HOLDER = """
import sys, time
from pathlib import Path
from tandem.store.journal import Journal
j = Journal.open(Path(sys.argv[1]))
print("writable" if j.writable else "read-only", flush=True)
n = int(sys.argv[2])
if j.writable:
    for i in range(n):
        j.append({"type": "user", "turn": 1, "text": f"{sys.argv[3]}-{i}"})
    j.sync()
print("done", flush=True)
sys.stdin.readline()
"""

WRITER = """
import sys
from pathlib import Path
from tandem.store.journal import Journal
j = Journal.open(Path(sys.argv[1]))
assert j.writable, j.notices
print(j.last_seq, flush=True)
i = 0
while True:
    i += 1
    e = j.append({"type": "assistant", "turn": i, "text": "x" * (i % 3000)})
    if i % 50 == 0:
        j.sync()
"""


def spawn(code: str, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_second_process_gets_read_only_and_move_is_refused(home: Path, tmp_path: Path) -> None:
    j = Journal.create(home, str(tmp_path))
    j.close()
    child = spawn(HOLDER, str(j.path), "100", "child")
    try:
        assert child.stdout and child.stdout.readline().strip() == "writable"
        assert child.stdout.readline().strip() == "done"
        mine = Journal.open(j.path)
        assert not mine.writable
        assert f"process {child.pid}" in (mine.read_only_reason or "")
        assert any("read-only" in n for n in mine.notices)
        with pytest.raises(TandemError) as exc:
            mine.append({"type": "user", "turn": 1, "text": "intruder"})
        assert exc.value.code == "read-only"
        holder = is_locked(layout.lock_path(j.path))
        assert holder is not None and holder.pid == child.pid
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        with pytest.raises(TandemError) as exc:
            relocate(home, j.path, str(elsewhere))
        assert exc.value.code == "busy" and str(child.pid) in exc.value.message
        assert "Nothing was moved" in exc.value.message
        assert j.path.exists()
        mine.close()
    finally:
        child.kill()
        child.wait()
    # The holder died by SIGKILL: its lock is stale and is taken over.
    assert read_holder(layout.lock_path(j.path)).pid == child.pid
    with Journal.open(j.path) as again:
        assert again.writable and again.last_seq == 100
        assert read_holder(layout.lock_path(j.path)).pid == os.getpid()
        again.append({"type": "user", "turn": 2, "text": "after takeover"})


def test_stale_lock_file_of_dead_pid_is_taken_over(home: Path, tmp_path: Path) -> None:
    j = Journal.create(home, str(tmp_path))
    j.close()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    layout.lock_path(j.path).write_text(json.dumps({"pid": dead.pid, "host": "h", "since": "t"}))
    with Journal.open(j.path) as again:
        assert again.writable
        assert read_holder(layout.lock_path(j.path)).pid == os.getpid()
    assert not layout.lock_path(j.path).exists()  # released cleanly


def test_racing_writers_never_interleave(home: Path, tmp_path: Path) -> None:
    j = Journal.create(home, str(tmp_path))
    j.close()
    kids = [spawn(HOLDER, str(j.path), "300", f"k{n}") for n in range(3)]
    try:
        states = [k.stdout.readline().strip() for k in kids]  # type: ignore[union-attr]
        assert sorted(states) == ["read-only", "read-only", "writable"]
        for k in kids:
            assert k.stdout and k.stdout.readline().strip() == "done"
    finally:
        for k in kids:
            k.kill()
            k.wait()
    with Journal.open(j.path, writable=False) as r:
        got = list(r.entries())
    assert [e.seq for e in got] == list(range(1, 301))
    writers = {e.text.split("-")[0] for e in got}  # type: ignore[attr-defined]
    assert len(writers) == 1


def test_kill_9_at_random_points_loses_no_complete_entry(home: Path, tmp_path: Path) -> None:
    j = Journal.create(home, str(tmp_path))
    j.close()
    rng = random.Random(1234)
    deadline = time.monotonic() + 12
    rounds = 0
    seen_total = 0
    torn_reports = 0
    while time.monotonic() < deadline and rounds < 25:
        child = spawn(WRITER, str(j.path))
        assert child.stdout
        start_seq = int(child.stdout.readline())
        time.sleep(rng.uniform(0.01, 0.25))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        # Every complete line in the file must parse; the reopened journal opens.
        with Journal.open(j.path) as reopened:
            torn_reports += sum("set aside" in n for n in reopened.notices)
            seqs = [e.seq for e in reopened.entries()]
            assert seqs == list(range(1, len(seqs) + 1)), "a complete entry was lost"
            assert len(seqs) >= start_seq >= seen_total
            assert reopened.last_seq == len(seqs)
            seen_total = len(seqs)
        rounds += 1
    assert rounds >= 5 and seen_total > 0
    print(f"kill -9 rounds={rounds} entries={seen_total} torn tails set aside={torn_reports}")


FULL_DISK = """
import os, resource, signal, sys
from pathlib import Path
from tandem.protocol.base import TandemError
from tandem.store.journal import Journal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
j = Journal.open(Path(sys.argv[1]))
size = j.path.stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, size + 100))
try:
    j.append({"type": "user", "turn": 1, "text": "x" * 500})
except TandemError as e:
    print(e.code, flush=True)
print(j.path.stat().st_size == size, j.last_seq, flush=True)
"""


def test_failed_write_leaves_no_partial_line(home: Path, tmp_path: Path) -> None:
    """A write cut short by the file size limit (like a full disk) is undone."""
    j = Journal.create(home, str(tmp_path))
    j.append({"type": "user", "turn": 1, "text": "kept"})
    j.close()
    before = j.path.read_bytes()
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    out = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(j.path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert out.stdout.split() == ["io", "True", "1"], out.stderr
    assert j.path.read_bytes() == before
    with Journal.open(j.path) as again:
        assert again.notices == [] and again.last_seq == 1
