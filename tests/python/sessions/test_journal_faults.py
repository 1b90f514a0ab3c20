"""Journal robustness: a full or read-only disk, non-finite
numbers, a damaged header, a read-only TANDEM_HOME. Real files, the real CLI; the disk
faults come through the journal's I/O seam (`Journal.io`)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tandem.protocol.base import TandemError
from tandem.store.journal import Journal, JournalIO
from tandem.store.jsonl import dumps_line, loads_line
from tandem.store.listing import list_sessions

from .conftest import Cli


class FaultyDisk(JournalIO):
    """A disk that can fill up (ENOSPC), turn read-only (EROFS) or tear a write."""

    def __init__(self) -> None:
        super().__init__()
        self.fault: int | None = None
        self.tear = False
        """Write half of the next line for real, then fail (a torn write)."""

    def _check(self) -> None:
        if self.fault is not None:
            raise OSError(self.fault, os.strerror(self.fault))

    def write(self, fd: int, data: bytes) -> int:
        if self.tear:
            os.write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._check()
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        self._check()
        os.fsync(fd)

    def truncate(self, fd: int, length: int) -> None:
        self._check()
        os.ftruncate(fd, length)


def _journal_on(disk: FaultyDisk, home: Path, cwd: Path) -> Journal:
    """A journal with one entry ("kept"), writing through DISK from now on."""
    j = Journal.create(home, str(cwd))
    j.append({"type": "user", "turn": 1, "text": "kept"})
    j.io = disk
    return j


def test_a_full_disk_is_one_clear_error_and_nothing_is_half_written(
        home: Path, tmp_path: Path) -> None:
    disk = FaultyDisk()
    j = _journal_on(disk, home, tmp_path)
    before = j.path.read_bytes()
    disk.fault = errno.ENOSPC
    with pytest.raises(TandemError) as err:
        j.append({"type": "user", "turn": 1, "text": "lost"})
    assert err.value.code == "io" and err.value.message.startswith("disk full: ")
    assert str(j.path) in err.value.message
    with pytest.raises(TandemError) as err:
        j.sync()
    assert err.value.message.startswith("disk full: ")
    disk.fault = errno.EROFS
    with pytest.raises(TandemError) as err:
        j.append({"type": "user", "turn": 1, "text": "lost"})
    assert err.value.message.startswith("read-only file system: ")
    assert j.path.read_bytes() == before
    disk.fault = None  # the disk is back: the journal goes on where it was
    assert j.append({"type": "user", "turn": 1, "text": "again"}).seq == 2
    j.close()


class CountingDisk(FaultyDisk):
    """`FaultyDisk`, counting the fsyncs asked of it."""

    def __init__(self) -> None:
        super().__init__()
        self.fsyncs = 0

    def fsync(self, fd: int) -> None:
        self.fsyncs += 1
        super().fsync(fd)


def test_sync_fsyncs_only_what_is_not_yet_durable(home: Path, tmp_path: Path) -> None:
    disk = CountingDisk()
    j = _journal_on(disk, home, tmp_path)
    j.sync()  # opened: what came before is not known to be durable
    j.sync()
    assert disk.fsyncs == 1
    j.append({"type": "user", "turn": 1, "text": "one"})
    j.sync()
    j.sync()
    assert disk.fsyncs == 2
    j.append({"type": "user", "turn": 1, "text": "two"})
    disk.fault = errno.EIO  # a failed fsync leaves it unsynced: the next sync tries again
    for _ in range(2):
        with pytest.raises(TandemError):
            j.sync()
    assert disk.fsyncs == 4
    disk.fault = None
    j.sync()
    j.sync()
    assert disk.fsyncs == 5
    disk.fault = errno.ENOSPC  # a refused write may have changed the file: unsynced
    with pytest.raises(TandemError):
        j.append({"type": "user", "turn": 1, "text": "lost"})
    disk.fault = None
    j.sync()
    assert disk.fsyncs == 6
    j.close()


def test_a_torn_write_that_cannot_be_cut_back_is_repaired_before_the_next_append(
        home: Path, tmp_path: Path) -> None:
    disk = FaultyDisk()
    j = _journal_on(disk, home, tmp_path)
    good = j.path.read_bytes()
    disk.tear, disk.fault = True, errno.EROFS  # half a line lands; the cut-back fails
    with pytest.raises(TandemError):
        j.append({"type": "user", "turn": 1, "text": "torn" * 50})
    assert j.path.read_bytes() != good  # the torn half is on disk
    disk.tear = False
    with pytest.raises(TandemError):  # still failing: refused, nothing glued to the tail
        j.append({"type": "user", "turn": 1, "text": "next"})
    disk.fault = None
    assert j.append({"type": "user", "turn": 1, "text": "next"}).seq == 2
    j.close()
    assert [e.model_dump()["text"] for e in Journal.open(j.path, writable=False).entries()] \
        == ["kept", "next"]


def test_a_torn_tail_left_by_a_failed_disk_is_set_aside_on_next_open(
        home: Path, tmp_path: Path) -> None:
    disk = FaultyDisk()
    j = _journal_on(disk, home, tmp_path)
    disk.tear, disk.fault = True, errno.EROFS
    with pytest.raises(TandemError):
        j.append({"type": "user", "turn": 1, "text": "torn" * 50})
    j.io = JournalIO()  # the process goes away with the tail still torn
    j.close()
    again = Journal.open(j.path)
    assert any("set aside" in n for n in again.notices)
    assert again.last_seq == 1 and again.append({"type": "user", "turn": 1, "text": "b"}).seq == 2
    again.close()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_are_refused_on_write(home: Path, tmp_path: Path,
                                                 value: float) -> None:
    j = Journal.create(home, str(tmp_path))
    before = j.path.read_bytes()
    with pytest.raises(TandemError) as err:
        j.append({"type": "tool_call", "turn": 1, "call_id": "c", "name": "read_file",
                  "input": {"limit": value}})
    assert err.value.code == "invalid" and "non-finite" in err.value.message
    assert j.path.read_bytes() == before and j.last_seq == 0
    with pytest.raises(ValueError):
        dumps_line({"x": value})
    j.close()


@pytest.mark.parametrize("token", [b"Infinity", b"-Infinity", b"NaN", b"1e999"])
def test_non_finite_numbers_are_set_aside_on_read(home: Path, tmp_path: Path,
                                                  token: bytes) -> None:
    j = Journal.create(home, str(tmp_path))
    j.append({"type": "user", "turn": 1, "text": "a"})
    j.close()
    with open(j.path, "ab") as f:
        f.write(b'{"type":"user","seq":' + token + b',"ts":"2026-01-01T00:00:00.000Z",'
                b'"turn":1,"text":"b"}\n')
        f.write(b'{"type":"user","seq":3,"ts":"2026-01-01T00:00:00.000Z","turn":1,'
                b'"text":"c","n":' + token + b'}\n')
    with pytest.raises(ValueError):
        loads_line(b'{"n":' + token + b'}')
    again = Journal.open(j.path)
    assert again.last_seq == 1  # the bad tail lines are not believed
    assert [e.model_dump()["text"] for e in again.entries()] == ["a"]
    assert sum("unreadable entry skipped" in n for n in again.notices) == 2
    assert [e.seq for e in again.page()] == [1]
    again.close()
    (row,) = list_sessions(home)  # the listing reads only the tail's prefix, and lists it
    assert row.damaged is None and row.id == j.id


def test_infinite_seq_does_not_break_the_cli_for_every_session(
        cli: Cli, home: Path, project) -> None:
    one, two = project("one"), project("two")
    assert cli.run(["sessions", "new"], cwd=one).code == 0
    assert cli.run(["sessions", "new"], cwd=two).code == 0
    (path,) = (home / "sessions").glob("one-*/*.jsonl")
    with open(path, "ab") as f:
        f.write(b'{"type":"user","seq":Infinity,"ts":"2026-01-01T00:00:00.000Z","turn":1,'
                b'"text":"x"}\n')
    listed = cli.run(["sessions", "list", "--all"], cwd=two)
    assert listed.code == 0 and "Traceback" not in listed.err, listed.err
    assert len(listed.out.strip().splitlines()) == 2
    resumed = cli.run(["continue", "--json"], cwd=one)
    assert resumed.code == 0, resumed.err
    assert "Traceback" not in resumed.err


def _damage_header(home: Path, name: str) -> Path:
    (path,) = (home / "sessions").glob(f"{name}-*/*.jsonl")
    data = path.read_bytes()
    path.write_bytes(b'{"type":"header","id":' + data[30:40] + data[data.index(b"\n"):])
    return path


def test_a_damaged_header_is_listed_as_damaged(cli: Cli, home: Path, project) -> None:
    one, two = project("one"), project("two")
    assert cli.run(["sessions", "new"], cwd=one).code == 0
    assert cli.run(["sessions", "new"], cwd=two).code == 0
    path = _damage_header(home, "one")
    for _ in range(2):  # the second listing comes from the summary cache
        rows = list_sessions(home)
        assert [r.damaged is not None for r in rows] == [False, True]  # damaged rows last
        bad = rows[1]
        assert bad.path == str(path) and bad.id in path.name and "header" in (bad.damaged or "")
    listed = cli.run(["sessions", "list", "--all"], cwd=two)
    assert listed.code == 0, listed.err
    assert "damaged" in listed.out and len(listed.out.strip().splitlines()) == 2
    data = json.loads(cli.run(["sessions", "list", "--all", "--json"], cwd=two).out)
    assert [bool(r["damaged"]) for r in data] == [False, True]
    # `continue` in the damaged session's project starts afresh rather than failing.
    cont = cli.run(["continue", "--json"], cwd=one)
    assert cont.code == 0, cont.err
    assert cont.json()["id"] not in path.name


def _can_mount_privately() -> str | None:
    """Why a private tmpfs cannot be mounted here (None when it can)."""
    if shutil.which("unshare") is None:
        return "no unshare(1)"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"cannot mount a tmpfs: {probe.stderr.strip()}"


class TmpfsCli(Cli):
    """Runs the CLI with TANDEM_HOME on a private tmpfs (its own mount namespace, so
    nothing outlives the run): SIZE bytes, remounted read-only when READ_ONLY."""

    def __init__(self, env: dict[str, str], home: Path, size: str, read_only: bool) -> None:
        super().__init__(env)
        self.home, self.size, self.read_only = home, size, read_only

    def argv(self, args: list[str]) -> list[str]:
        ro = 'mkdir "$0/sessions" && mount -o remount,ro "$0" && ' if self.read_only else ""
        script = f'mount -t tmpfs -o size={self.size} tmpfs "$0" && {ro}exec "$@"'
        return ["unshare", "-m", "sh", "-c", script, str(self.home), *super().argv(args)]


def tmpfs_cli(env: dict[str, str], home: Path, size: str = "1m",
              read_only: bool = False) -> TmpfsCli:
    """A `TmpfsCli`, or a skip with the reason when this machine cannot mount one."""
    why = _can_mount_privately()
    if why is not None:
        pytest.skip(f"a real read-only / full TANDEM_HOME needs a private tmpfs: {why}")
    return TmpfsCli(env, home, size, read_only)


def test_a_read_only_home_is_one_sentence_not_a_traceback(
        env: dict[str, str], home: Path, project) -> None:
    one = project("one")
    env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    cli = tmpfs_cli(env, home, read_only=True)
    for args in (["sessions", "new"], ["continue"], ["ask", "--provider", "openai:m", "hi"],
                 ["sessions", "list", "--all"], ["serve", "--no-stdin-watch"]):
        result = cli.run(args, cwd=one)
        assert "Traceback" not in result.err, result.err
        if args[1:2] == ["list"]:  # reading a read-only home works
            assert result.code == 0, result.err
            continue
        assert result.code != 0
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tandem: "), result.err
        assert "read-only file system" in lines[0] and str(home) in lines[0], lines[0]


def test_a_full_home_ends_the_ask_turn_failed_with_one_sentence(
        env: dict[str, str], home: Path, project) -> None:
    """A real full disk: TANDEM_HOME on a 1 MiB tmpfs, a 3 MB answer."""
    from fakes.openai_server import FakeOpenAI
    from fakes.script import Reply

    one = project("one")
    # The sessions fixtures' user settings hold keys no turn accepts ("model").
    (Path(env["XDG_CONFIG_HOME"]) / "tandem" / "settings.json").write_text("{}")
    cli = tmpfs_cli(env, home, size="1m")
    with FakeOpenAI([Reply(text="y" * 3_000_000, chunk_size=30_000)]) as fake:
        env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=fake.base_url + "/v1")
        result = cli.run(["ask", "--json", "--provider", "openai:m", "hi"], cwd=one)
    assert "Traceback" not in result.err, result.err
    assert result.code == 1, (result.out[-500:], result.err)
    assert "turn 1 failed: disk full: " in result.err, result.err
    assert json.loads(result.out.strip().splitlines()[-1])["outcome"] == "failed"
