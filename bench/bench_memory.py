"""Backend memory: RSS of a real ``tandem serve`` with 20 sessions open.

Nineteen sessions of 10 turns and one of 10,000 turns (the journal of
``bench_projection``: 45k entries, 10.5 MB) are written to a fresh
TANDEM_HOME; a real backend is started as Emacs starts it, and each session
is opened through the protocol (``sessions/open-file``, then its last page
of entries, as the view does), then given the compaction check a send runs
first (``sessions/compaction-status``: it parses the whole journal into the
entry cache). The figures are the backend's resident set (``VmRSS`` from
``/proc``) after each step, beside the same backend's RSS right after
``hello`` (the anchor, same run); the peak (``VmHWM``) is printed too.
Run: ``.venv/bin/python bench/bench_memory.py``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "python"))
sys.path.insert(0, str(BENCH.parent / "tests" / "python" / "server"))

from epc_peer import Peer, start_backend  # noqa: E402

from bench_projection import build, turn_entries  # noqa: E402
from tandem.store.journal import Journal  # noqa: E402

TOKEN = "bench-memory-token"
SMALL = 19


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of PID in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.split()
    return int(fields["VmRSS"][0]) / 1024, int(fields["VmHWM"][0]) / 1024


def call(peer: Peer, method: str, params: dict[str, Any] | None = None) -> Any:
    """Call METHOD and return its value (events in between are skipped)."""
    uid = peer.call(method, params)
    while True:
        message = peer.recv()
        if message[0] in ("return", "return-error", "epc-error") and message[1] == uid:
            if message[0] != "return":
                raise RuntimeError(f"{method}: {message}")
            return message[2]


def _plist(items: list[Any]) -> dict[str, Any]:
    return {str(k): v for k, v in zip(items[::2], items[1::2], strict=True)}


def main() -> None:
    """Print the memory figure as a JSON line."""
    with tempfile.TemporaryDirectory(prefix="tandem-bench-mem-") as tmp:
        home, cwd = Path(tmp) / "home", Path(tmp) / "proj"
        cwd.mkdir()
        journals = [build(home, cwd).path]
        for i in range(SMALL):
            journal = Journal.create(home, str(cwd), title=f"small {i}")
            for n in range(1, 11):
                for entry in turn_entries(n, directive=False):
                    journal.append(entry)
            journal.sync()
            journals.append(journal.path)
        proc = start_backend(home, TOKEN)
        try:
            peer = Peer(proc.port)  # type: ignore[attr-defined]
            call(peer, "hello", {"token": TOKEN})
            idle, _ = rss_mb(proc.pid)
            sessions = []
            for path in journals:
                info = call(peer, "sessions/open-file", {"path": str(path), "cwd": str(cwd)})
                session = info["id"] if isinstance(info, dict) else _plist(info)[":id"]
                sessions.append(session)
                call(peer, "sessions/entries", {"session": session, "limit": 200})
            opened, _ = rss_mb(proc.pid)
            # What a send does first: the compaction check parses the whole
            # journal into the entry cache (kept: the next send parses only
            # what is new).
            for session in sessions:
                call(peer, "sessions/compaction-status",
                     {"session": session, "provider": "openai:gpt-4o"})
            rss, peak = rss_mb(proc.pid)
            peer.close()
        finally:
            proc.terminate()
            proc.wait(10)
        print(json.dumps({"bench": "backend RSS, 20 sessions open (one of 10k turns)",
                          "value": round(opened, 1), "unit": "MB",
                          "anchor": "the same backend after hello", "anchor_value": round(idle, 1),
                          "target": None}), flush=True)
        print(json.dumps({"bench": "backend RSS, 20 sessions open and checked for compaction",
                          "value": round(rss, 1), "unit": "MB",
                          "anchor": "the same backend after hello", "anchor_value": round(idle, 1),
                          "target": None, "peak": round(peak, 1)}), flush=True)


if __name__ == "__main__":
    main()
