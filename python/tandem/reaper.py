"""Child processes die with the backend, however it ends (``kill -9`` included).

Tool shells and ACP agents each run in their own session, so their process
group holds everything they start. `ProcessTracker` registers each group:

* with a watchdog, a small Python process started once per backend in a
  session of its own, reading a pipe only the backend holds open: when the
  backend dies the pipe ends and the watchdog SIGKILLs every group still
  registered, then exits;
* in ``TANDEM_HOME/run/<instance>.procs``, so that `sweep_stale` at the next
  start kills what a dead backend left behind if even its watchdog was
  killed. A process is killed there only if it carries the marker
  ``TANDEM_PROCESS_OWNER=<instance>`` in its environment (the number alone may
  belong to someone else by now).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
from pathlib import Path

from tandem.paths import run_dir, tandem_home
from tandem.store import fsutil

OWNER_VAR = "TANDEM_PROCESS_OWNER"
"""Marks each process a backend started (value: the backend's instance id)."""
RECORD_SUFFIX = ".procs"

# The watchdog: no imports of tandem, isolated mode, so it starts in ~20 ms.
_WATCHDOG = r"""
import os, signal, sys
groups = set()
for line in sys.stdin:
    sign, _, num = line.strip().partition(" ")
    if num.isdigit():
        (groups.add if sign == "+" else groups.discard)(int(num))
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (start time in clock ticks), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def living_groups() -> dict[int, list[int]]:
    """Living processes by process group, from /proc.

    Zombies count as gone: a container's init may never reap the orphans
    of a killed group, and a zombie holds no resources but its pid.
    """
    out: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 3 and fields[0] not in ("Z", "X"):
            out.setdefault(int(fields[2]), []).append(int(entry.name))
    return out


def group_alive(pgid: int) -> bool:
    """Whether process group PGID has a living member."""
    return pgid in living_groups()


class ProcessTracker:
    """The process groups one backend started, killed when it dies."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.instance = f"{os.getpid()}-{_start_time(os.getpid())}-{secrets.token_hex(4)}"
        self._lock = threading.Lock()
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._record: int | None = None
        self._groups: set[int] = set()

    @property
    def record_path(self) -> Path:
        """This backend's record of registered groups."""
        return run_dir(self.home) / f"{self.instance}{RECORD_SUFFIX}"

    def owner_env(self) -> dict[str, str]:
        """The marker variable every tracked process gets."""
        return {OWNER_VAR: self.instance}

    def _send(self, line: str) -> None:
        data = line.encode() + b"\n"
        if self._watchdog is None or self._watchdog.poll() is not None:
            self._watchdog = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCHDOG],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,  # a signal to the backend's group spares it
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            )
            assert self._watchdog.stdin is not None
            for pgid in self._groups:
                self._watchdog.stdin.write(f"+ {pgid}\n".encode())
        assert self._watchdog.stdin is not None
        with contextlib.suppress(OSError):
            self._watchdog.stdin.write(data)
            self._watchdog.stdin.flush()
        if self._record is None:
            fsutil.private_dir(self.record_path.parent)
            self._record = os.open(self.record_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                                   fsutil.PRIVATE_FILE_MODE)
        os.write(self._record, data)

    def register(self, pgid: int) -> None:
        """Kill group PGID if this backend dies."""
        with self._lock:
            self._groups.add(pgid)
            self._send(f"+ {pgid}")
            self._prune()

    def release(self, pgid: int) -> None:
        """Forget group PGID once it has no living member; kept while it has one."""
        with self._lock:
            if pgid in self._groups and not group_alive(pgid):
                self._groups.discard(pgid)
                self._send(f"- {pgid}")

    def _prune(self) -> None:
        # Groups left running after their call (a background job) stay
        # registered until they end; look again now and then.
        if len(self._groups) > 8:
            living = living_groups()
            for pgid in [g for g in self._groups if g not in living]:
                self._groups.discard(pgid)
                self._send(f"- {pgid}")

    def close(self) -> None:
        """A clean stop: kill what is still registered, stop the watchdog, drop the record."""
        with self._lock:
            for pgid in self._groups:
                with contextlib.suppress(OSError):
                    os.killpg(pgid, signal.SIGKILL)
            self._groups.clear()
            if self._watchdog is not None and self._watchdog.stdin is not None:
                with contextlib.suppress(OSError):
                    self._watchdog.stdin.close()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._watchdog.wait(2)
            if self._record is not None:
                os.close(self._record)
                self._record = None
            self.record_path.unlink(missing_ok=True)


def _owned_by(pid: int, instance: str) -> bool:
    marker = f"{OWNER_VAR}={instance}".encode()
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def sweep_stale(home: Path) -> int:
    """Kill the processes dead backends of HOME left behind; return how many.

    A record whose backend still runs (same pid and start time) is left alone.
    """
    folder = run_dir(home)
    try:
        records = [p for p in folder.iterdir() if p.name.endswith(RECORD_SUFFIX)]
    except OSError:
        return 0
    killed = 0
    living: dict[int, list[int]] | None = None
    for record in records:
        instance = record.name[: -len(RECORD_SUFFIX)]
        pid, _, rest = instance.partition("-")
        started = rest.rpartition("-")[0]
        if pid.isdigit() and _start_time(int(pid)) == started:
            continue  # that backend is alive
        groups: set[int] = set()
        with contextlib.suppress(OSError):
            for line in record.read_text().splitlines():
                sign, _, num = line.partition(" ")
                if num.isdigit():
                    (groups.add if sign == "+" else groups.discard)(int(num))
        living = living_groups() if living is None else living
        for pgid in groups:
            for member in living.get(pgid, []):
                if _owned_by(member, instance):
                    with contextlib.suppress(OSError):
                        os.kill(member, signal.SIGKILL)
                        killed += 1
        record.unlink(missing_ok=True)
    return killed


_tracker: ProcessTracker | None = None
_tracker_lock = threading.Lock()


def tracker() -> ProcessTracker:
    """This process's tracker (created for `tandem_home` on first use)."""
    global _tracker
    with _tracker_lock:
        if _tracker is None:
            _tracker = ProcessTracker(tandem_home())
        return _tracker


def install(home: Path) -> ProcessTracker:
    """Make the process's tracker record under HOME (the backend calls this at start)."""
    global _tracker
    with _tracker_lock:
        _tracker = ProcessTracker(home)
        return _tracker
