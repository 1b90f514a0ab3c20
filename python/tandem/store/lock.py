"""One writer per journal: a lock file beside it that names the holding process.

The mutual exclusion itself is a kernel ``flock`` on the lock file, so a
holder that dies (even by ``kill -9``) releases it at once; a lock file left
behind by a dead process is therefore stale by construction and is taken
over. The file's content (pid, host, start time) is what a refused opener
shows the user.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from tandem.store import fsutil


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as written in the lock file."""

    pid: int | None
    host: str
    since: str

    def describe(self) -> str:
        """A short human description: ``process 1234 on host (since …)``."""
        who = f"process {self.pid}" if self.pid else "another process"
        where = f" on {self.host}" if self.host else ""
        since = f" since {self.since}" if self.since else ""
        return f"{who}{where}{since}"


class LockHeld(Exception):
    """The lock is held by a live process: HOLDER says which."""

    def __init__(self, path: Path, holder: Holder) -> None:
        super().__init__(f"{path} is held by {holder.describe()}")
        self.path = path
        self.holder = holder


def read_holder(path: Path) -> Holder:
    """Parse the lock file at PATH (tolerates an empty or foreign file)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        data = {}
    pid = data.get("pid") if isinstance(data, dict) else None
    return Holder(
        pid=pid if isinstance(pid, int) else None,
        host=str(data.get("host", "")) if isinstance(data, dict) else "",
        since=str(data.get("since", "")) if isinstance(data, dict) else "",
    )


class JournalLock:
    """An acquired lock; `release` (or garbage collection of the fd) frees it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        """True until released."""
        return self._fd is not None

    @classmethod
    def acquire(cls, path: Path) -> JournalLock:
        """Take the lock at PATH or raise `LockHeld` naming the live holder.

        A file left by a dead holder is taken over. After locking we check the
        path still names the inode we locked: a concurrent relocation may have
        unlinked it, in which case we retry on the new file.
        """
        for _ in range(50):
            fd = fsutil.open_private(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise LockHeld(path, _holder_when_written(path)) from None
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            record = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode() + b"\n", 0)
            return cls(path, fd)
        raise OSError(f"could not lock {path}: it keeps being replaced")

    def release(self, unlink: bool = True) -> None:
        """Free the lock; with UNLINK, remove the lock file first (we still hold it)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if unlink:
                try:
                    if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                        os.unlink(self.path)
                except FileNotFoundError:
                    pass
        finally:
            os.close(fd)

    def __del__(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass


def _holder_when_written(path: Path) -> Holder:
    # The holder writes its record right after locking; give it a moment.
    holder = read_holder(path)
    for _ in range(20):
        if holder.pid is not None:
            break
        time.sleep(0.005)
        holder = read_holder(path)
    return holder


def is_locked(path: Path) -> Holder | None:
    """The live holder of the lock at PATH, or None if nobody holds it.

    It probes with a shared ``flock`` for an instant, so an exclusive
    `JournalLock.acquire` racing with it may fail; use it for display only.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder_when_written(path)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
