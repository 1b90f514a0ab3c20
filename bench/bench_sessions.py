"""Session journal benchmarks: open 100k entries, list 10k sessions, append p99.

Prints JSON lines ``{"bench", "value", "unit", "anchor", "anchor_value", "target"}``;
every figure is a median over several runs with its anchor measured in the
same run on the same files (warm page cache: this measures tandem's code, not
the disk). Run: ``.venv/bin/python bench/bench_sessions.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from benchlib import emit, median_ms  # noqa: E402
from tandem.store import layout  # noqa: E402
from tandem.store.ids import uuid7  # noqa: E402
from tandem.store.journal import Journal, now_iso  # noqa: E402
from tandem.store.listing import CACHE_NAME, list_sessions  # noqa: E402
from tandem.store.models import Header, entry_to_dict, parse_entry  # noqa: E402


def sample_entries(n: int) -> list[dict]:
    """A realistic mix: turns of user, assistant, tool call and result."""
    out: list[dict] = []
    ts = now_iso()
    turn = 0
    while len(out) < n:
        turn += 1
        base = {"turn": turn, "ts": ts}
        out.append({"type": "turn_start", "origin": "chat", "provider": "openai", **base})
        out.append({"type": "user", "text": "please fix the parser " * 4, **base})
        out.append(
            {
                "type": "tool_call",
                "call_id": f"c{turn}",
                "name": "read",
                "kind": "read",
                "title": "read parser.py",
                "input": {"path": "src/parser.py"},
                **base,
            }
        )
        out.append(
            {
                "type": "tool_result",
                "call_id": f"c{turn}",
                "status": "completed",
                "output": "def parse(x):\n    return x\n" * 4,
                **base,
            }
        )
        out.append({"type": "assistant", "text": "Done: the parser now handles it. " * 3, **base})
        out.append({"type": "turn_end", "outcome": "succeeded", "error": None, **base})
    out = out[:n]
    for seq, e in enumerate(out, 1):
        e["seq"] = seq
    # As tandem writes them: model field order (type, seq, ts, turn, ...).
    return [entry_to_dict(parse_entry(e)) for e in out]


def write_journal(home: Path, cwd: str, entries: list[dict], title: str = "bench") -> Path:
    """Write a journal file directly (the bench's setup, not what is measured)."""
    sid = uuid7()
    created = now_iso()
    folder = layout.slug_dir(home, cwd, create=True)
    path = folder / layout.journal_name(created, sid)
    header = Header(id=sid, cwd=cwd, created=created, title=title)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(header.model_dump(), separators=(",", ":")) + "\n")
        for e in entries:
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
    return path


def bench_open(root: Path) -> None:
    """Open a 100k-entry journal and load every entry as a typed model."""
    path = write_journal(root, "/bench/open", sample_entries(100_000))

    def tandem_open() -> None:
        j = Journal.open(path, writable=False)
        entries = list(j.entries())
        assert len(entries) == 100_000
        j.close()

    def header_tail_only() -> None:
        Journal.open(path, writable=False).close()

    def open_last_page() -> None:  # what resuming in Emacs does: open, show the tail
        j = Journal.open(path, writable=False)
        assert len(j.page(limit=200)) == 200
        j.close()

    def raw_json() -> None:
        with open(path, "rb") as f:
            rows = [json.loads(line) for line in f]
        assert len(rows) == 100_001

    anchor = median_ms(raw_json, 5)
    emit("journal_open_100k_full", median_ms(tandem_open, 5), "json_loads_raw_lines", anchor, 1000)
    emit(
        "journal_open_100k_header_tail",
        median_ms(header_tail_only, 5),
        "json_loads_raw_lines",
        anchor,
        1000,
    )
    emit(
        "journal_open_100k_last_page_200",
        median_ms(open_last_page, 5),
        "json_loads_raw_lines",
        anchor,
        1000,
    )


def bench_list(root: Path) -> None:
    """List 10k sessions spread over 100 projects, each with a few turns."""
    entries = sample_entries(30)
    for i in range(10_000):
        write_journal(root, f"/bench/project-{i % 100}", entries, title=f"session {i}")

    def tandem_list() -> None:
        assert len(list_sessions(root)) == 10_000

    def naive_full_parse() -> None:
        rows = []
        for folder in layout.slug_dirs(root):
            for p in layout.iter_journals(folder):
                with open(p, "rb") as f:
                    lines = [json.loads(line) for line in f]
                rows.append((lines[0]["title"], lines[-1]["ts"]))
        assert len(rows) == 10_000

    def cold_list() -> None:
        for folder in layout.slug_dirs(root):
            (folder / CACHE_NAME).unlink(missing_ok=True)
        tandem_list()

    anchor = median_ms(naive_full_parse, 3)
    # Cold: no summary cache (first listing, or after every journal changed).
    emit("list_10k_sessions_cold", median_ms(cold_list, 3), "naive_full_parse_listing", anchor,
         None)
    emit("list_10k_sessions", median_ms(tandem_list, 5), "naive_full_parse_listing", anchor, 200)


def bench_append(root: Path) -> None:
    """p99 of one append (validate, encode, one write), no fsync (that is per turn)."""
    j = Journal.create(root, "/bench/append")
    entry = {"type": "assistant", "turn": 1, "text": "Done: the parser now handles it. " * 3}
    times = []
    for _ in range(20_000):
        t = time.perf_counter()
        j.append(entry)
        times.append((time.perf_counter() - t) * 1000)
    line = (json.dumps({**entry, "seq": 1, "ts": now_iso()}) + "\n").encode()
    raw = []
    fd = os.open(root / "raw.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for _ in range(20_000):
        t = time.perf_counter()
        os.write(fd, line)
        raw.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    os.fsync(fd)
    raw_sync_ms = (time.perf_counter() - t) * 1000
    os.close(fd)
    t = time.perf_counter()
    j.sync()
    sync_ms = (time.perf_counter() - t) * 1000
    j.close()

    def p99(xs: list[float]) -> float:
        return statistics.quantiles(xs, n=100)[98]

    emit("append_p99", p99(times), "os_write_same_line_p99", p99(raw), 2)
    emit(
        "append_median",
        statistics.median(times),
        "os_write_same_line_median",
        statistics.median(raw),
        2,
    )
    emit("turn_end_sync_20k_appends", sync_ms, "os_fsync_same_amount_raw", raw_sync_ms, None)


def main() -> None:
    """Run every benchmark in a fresh temporary TANDEM_HOME."""
    with tempfile.TemporaryDirectory(prefix="tandem-bench-") as tmp:
        root = Path(tmp)
        bench_append(root / "append")
        bench_open(root / "open")
        bench_list(root / "list")


if __name__ == "__main__":
    main()
