"""Checkpoint store growth: size and incremental time after 1,000 turns.

On a generated 20k-file tree, a store with N turns of history (ten changed
files each, one checkpoint per turn) is measured after its maintenance
pass: its size on disk and the median time of a real incremental
checkpoint with ten changed files. Figure: N = 1,000 beside N = 10 (the
anchor) in the same run. Building 1,000 turns with real snapshots would
take minutes here, so the history is written with ``git fast-import``
(the same blobs, trees, JSON records and per-checkpoint refs a turn
writes, in one pack) and the store then maintained as after a turn.
Run: ``.venv/bin/python bench/bench_store_growth.py [--files N] [--turns N]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import benchlib  # noqa: E402
from bench_checkpoints import change_ten, generate, timed_ms  # noqa: E402
from tandem.checkpoints import Checkpointer, maintenance, refs  # noqa: E402


def build_history(
    cp: Checkpointer, start: str, rels: list[str], turns: int, seed: int = 16
) -> None:
    """TURNS checkpoints after START, ten changed files each, by one ``fast-import``."""
    rng = random.Random(seed)
    out = [b""]
    for turn in range(1, turns + 1):
        record = {"tandem_checkpoint": 1, "label": f"turn {turn}", "root": str(cp.root),
                  "created": datetime.now(UTC).isoformat(), "gaps": [], "owner": "bench",
                  "turn": turn}
        message = json.dumps(record).encode()
        out.append(b"commit refs/tandem/tmp/build\nmark :%d\n" % turn)
        out.append(b"committer tandem <tandem@localhost> %d +0000\n" % (1_700_000_000 + turn))
        out.append(b"data %d\n%s\n" % (len(message), message))
        if turn == 1:
            out.append(b"from %s\n" % start.encode())
        for rel in rng.sample(rels, 10):
            body = f"edited in turn {turn} {rng.random()}\n".encode() * 20
            out.append(b"M 100644 inline %s\ndata %d\n%s\n" % (rel.encode(), len(body), body))
        out.append(b"\n")
    marks = cp.layout.dir / "marks"
    cp.git.run(["fast-import", "--quiet", f"--export-marks={marks}"], input=b"".join(out))
    lines = [f"create {refs.ref_of('bench', c)} {c}\n"
             for c in (m.split()[1] for m in marks.read_text().splitlines())]
    cp.git.run(["update-ref", "--stdin"], input="".join(lines).encode())
    cp.git.run(["update-ref", "-d", "refs/tandem/tmp/build"])
    marks.unlink()


def store_bytes(cp: Checkpointer) -> int:
    """Bytes the private repository takes on disk."""
    return sum(p.stat().st_size for p in cp.layout.git_dir.rglob("*") if p.is_file())


def measure(
    base: Path, root: Path, paths: list[Path], turns: int, runs: int
) -> tuple[float, float]:
    """(store MB, median incremental ms) after TURNS turns of history."""
    cp = Checkpointer(base / f"home-{turns}", root)
    first = cp.snapshot("base", owner="bench", turn=0)
    rels = [p.relative_to(root).as_posix() for p in paths if p.exists()]
    build_history(cp, first.id, rels, turns)
    cp.maintain(maintenance.Retention(), lambda: {"bench"})
    live = [p for p in paths if p.exists()]
    times = []
    for run in range(runs):
        change_ten(root, live, random.Random(5000 + run), 9000 + run)
        times.append(timed_ms(lambda r=run: cp.snapshot(f"turn {r}", owner="bench", turn=r)))
    return store_bytes(cp) / 1e6, statistics.median(times)


def main() -> None:
    """Print the store-growth figures as JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tandem-bench-store-") as tmp:
        base = Path(tmp)
        root = base / "ws"
        root.mkdir()
        paths = generate(root, args.files)
        subprocess.run(["sync"], check=False)
        small_mb, small_ms = measure(base, root, paths, 10, args.runs)
        big_mb, big_ms = measure(base, root, paths, args.turns, args.runs)
        benchlib.emit(f"checkpoint incremental after {args.turns} turns ({args.files} files)",
                      big_ms, "the same after 10 turns", small_ms, 250, digits=1)
        print(json.dumps({"bench": f"checkpoint store size after {args.turns} turns",
                          "value": round(big_mb, 1), "unit": "MB",
                          "anchor": "the same after 10 turns", "anchor_value": round(small_mb, 1),
                          "target": None}), flush=True)


if __name__ == "__main__":
    main()
