"""Re-rooting: each step of a move fails in turn and everything is put back."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from tandem.protocol.base import TandemError
from tandem.sessions.manager import SessionManager
from tandem.sessions.relocate import MoveOps, relocate
from tandem.store import fsutil, layout
from tandem.store.journal import Journal, read_header


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ROOT with its bytes; lock files and folder markers aside
    (the destination's slug folder may be claimed, holding only its marker)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix != ".lock" and p.name != layout.CWD_MARKER
    }


@pytest.fixture
def lost(home: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A session (3 entries, artifact folder) whose directory is gone, and a destination."""
    src = tmp_path / "src"
    src.mkdir()
    with Journal.create(home, str(src), "lost") as j:
        for i in range(3):
            j.append({"type": "user", "turn": i + 1, "text": f"m{i}"})
        j.artifacts_dir.mkdir()
        (j.artifacts_dir / "a.bin").write_bytes(os.urandom(5000))
        (j.artifacts_dir / "sub").mkdir()
        (j.artifacts_dir / "sub" / "b").write_text("b")
    shutil.rmtree(src)
    dest = tmp_path / "dest"
    dest.mkdir()
    return j.path, dest


class Failing(MoveOps):
    """Fails one step with a real OSError."""

    def __init__(self, step: str) -> None:
        self.step = step

    def move_journal(self, src: Path, dst: Path) -> None:
        if self.step == "journal":
            raise OSError(errno.EIO, "injected: journal rename failed")
        super().move_journal(src, dst)

    def move_artifacts(self, src: Path, dst: Path) -> None:
        if self.step == "artifacts":
            raise OSError(errno.EIO, "injected: artifact rename failed")
        super().move_artifacts(src, dst)

    def replace_header(self, tmp: Path, path: Path) -> None:
        if self.step == "header":
            raise OSError(errno.ENOSPC, "injected: header rewrite failed")
        super().replace_header(tmp, path)


@pytest.mark.parametrize("step", ["journal", "artifacts", "header"])
def test_failed_step_rolls_back_everything(home: Path, lost, step: str) -> None:
    path, dest = lost
    before = snapshot(home / "sessions")
    with pytest.raises(TandemError) as exc:
        relocate(home, path, str(dest), Failing(step))
    assert exc.value.code == "move-failed"
    assert "Nothing was moved" in exc.value.message and "injected" in exc.value.message
    assert snapshot(home / "sessions") == before
    leftovers = [p for p in (home / "sessions").rglob(".*") if p.name != layout.CWD_MARKER]
    assert leftovers == []  # no temp files left
    # And the session still opens where it was, writable (no lock left held).
    with Journal.open(path) as j:
        assert j.writable and j.last_seq == 3


def test_failed_step_through_manager_keeps_session_closed(home: Path, lost) -> None:
    path, dest = lost
    header, _ = read_header(path)
    m = SessionManager(home, move_ops=Failing("header"))
    with pytest.raises(TandemError):
        m.resume_id(header.id, str(dest), lambda q: True)
    assert m.current is None and path.exists()


def test_rollback_failure_names_what_was_not_restored(home: Path, lost, monkeypatch) -> None:
    path, dest = lost
    real_move = fsutil.move

    def no_way_back(src: Path, dst: Path, rename=os.rename) -> None:
        if dst == layout.artifacts_dir(path):
            raise OSError(errno.EROFS, "read-only file system")
        real_move(src, dst, rename)

    import tandem.sessions.relocate as reloc

    monkeypatch.setattr(reloc.fsutil, "move", no_way_back)
    with pytest.raises(TandemError) as exc:
        relocate(home, path, str(dest), Failing("header"))
    msg = exc.value.message
    assert "could not restore" in msg and "artifact folder left at" in msg
    assert "Nothing was moved" not in msg
    assert path.exists()  # the journal itself did go back


def test_successful_move_keeps_bytes_and_identity(home: Path, lost) -> None:
    path, dest = lost
    body = path.read_bytes().split(b"\n", 1)[1]
    art = snapshot(layout.artifacts_dir(path))
    moved = relocate(home, path, str(dest))
    moved.lock.release()
    assert moved.path.read_bytes().split(b"\n", 1)[1] == body
    assert snapshot(layout.artifacts_dir(moved.path)) == art
    header, _ = read_header(moved.path)
    assert header.cwd == str(dest.resolve()) and header.previous_files == [str(path)]
    assert not path.exists() and not layout.lock_path(path).exists()


def test_move_refuses_existing_destination_and_bad_dest(home: Path, lost, tmp_path) -> None:
    path, dest = lost
    with pytest.raises(TandemError) as exc:
        relocate(home, path, str(tmp_path / "missing"))
    assert exc.value.code == "invalid"
    target = layout.slug_dir(home, str(dest), create=True) / path.name
    target.write_text("occupied")
    with pytest.raises(TandemError) as exc:
        relocate(home, path, str(dest))
    assert exc.value.code == "exists" and path.exists()


def test_cross_filesystem_move_copies_verifies_deletes(tmp_path: Path) -> None:
    """/dev/shm is a tmpfs: rename gives EXDEV, the copy path runs for real."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem (/dev/shm tmpfs) on this machine")
    src_file = tmp_path / "j.jsonl"
    src_file.write_bytes(b"line\n" * 1000)
    src_dir = tmp_path / "j"
    (src_dir / "d").mkdir(parents=True)
    (src_dir / "d" / "f").write_bytes(os.urandom(10000))
    work = Path(shm) / f"tandem-test-{os.getpid()}"
    work.mkdir()
    try:
        fsutil.move(src_file, work / "j.jsonl")
        fsutil.move(src_dir, work / "j")
        assert not src_file.exists() and not src_dir.exists()
        assert (work / "j.jsonl").read_bytes() == b"line\n" * 1000
        assert len((work / "j" / "d" / "f").read_bytes()) == 10000

        def exdev(a: Path, b: Path) -> None:
            raise OSError(errno.EXDEV, "cross-device")

        # Verification failure leaves the source and removes the partial copy.
        back = tmp_path / "back.jsonl"
        import tandem.store.fsutil as fs

        real = fs._tree_digest
        calls = {"n": 0}

        def corrupt(p: Path) -> dict[str, str]:
            calls["n"] += 1
            return {"": str(calls["n"])}  # never equal: simulates a bad copy

        fs._tree_digest = corrupt  # type: ignore[assignment]
        try:
            with pytest.raises(OSError):
                fsutil.move(work / "j.jsonl", back, rename=exdev)
        finally:
            fs._tree_digest = real  # type: ignore[assignment]
        assert (work / "j.jsonl").exists() and not back.exists()
        assert not any(p.name.startswith(".back") for p in tmp_path.iterdir())
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_move_interrupted_before_header_rewrite_is_completed(home: Path, lost) -> None:
    """A crash after the journal rename left it in DEST's folder with the old cwd:
    resuming with consent finishes the move instead of failing."""
    path, dest = lost
    folder = layout.slug_dir(home, str(dest), create=True)
    os.rename(path, folder / path.name)
    header, _ = read_header(folder / path.name)
    m = SessionManager(home)
    active = m.resume_id(header.id, str(dest), lambda q: True)
    assert active.journal.path == folder / path.name and active.relocated
    assert active.journal.header.cwd == str(dest.resolve())
    assert [e.seq for e in active.journal.entries()] == [1, 2, 3]
    m.close()
