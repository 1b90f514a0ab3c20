"""Checkpoint benchmarks on a generated tree of 20k files.

Figures: first checkpoint, incremental checkpoint after 10 changed files
(target ≤ 250 ms), the same with nothing changed (a turn that edits
nothing), restore of those 10 changes (target ≤ 500 ms). Each one
beside its anchor measured in the same run on the same tree: a naive shadow
repository (separate GIT_DIR, work tree = the root) doing
``git add -A && git commit`` and, for restore, ``git reset --hard && git
clean -fd`` — the approach other agents use (its auto-gc off, so no
background work leaks into the next measurement). Medians over a few runs; warm
page cache. Prints JSON lines ``{"bench", "value", "unit", "anchor",
"anchor_value", "target"}``. Run: ``.venv/bin/python bench/bench_checkpoints.py``
(add ``--files N`` for a smaller tree).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from functools import partial  # noqa: E402

import benchlib  # noqa: E402

emit = partial(benchlib.emit, digits=1)  # milliseconds of git work: one decimal

from tandem.checkpoints import Checkpoint, Checkpointer  # noqa: E402


def timed_ms(fn: Callable[[], object]) -> float:
    """Wall time of one call of FN, in milliseconds."""
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def generate(root: Path, files: int, seed: int = 6) -> list[Path]:
    """A source-like tree: FILES text files over nested folders, plus ignored output."""
    rng = random.Random(seed)
    paths = []
    for i in range(files):
        d = root / f"pkg{i % 100:02d}" / f"mod{i % 13:02d}" / f"sub{i % 3}"
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"file{i:05d}.py"
        p.write_text("".join(f"value_{i}_{n} = {n}\n" for n in range(rng.randint(5, 80))))
        paths.append(p)
    (root / ".gitignore").write_text("build/\n*.pyc\n")
    (root / "build").mkdir()
    for i in range(50):
        (root / "build" / f"out{i}.o").write_bytes(os.urandom(2048))
    return paths


class Shadow:
    """The anchor: a naive shadow repository driven with porcelain commands."""

    def __init__(self, git_dir: Path, root: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env.update(
            GIT_DIR=str(git_dir),
            GIT_WORK_TREE=str(root),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_AUTHOR_NAME="shadow",
            GIT_AUTHOR_EMAIL="shadow@localhost",
            GIT_COMMITTER_NAME="shadow",
            GIT_COMMITTER_EMAIL="shadow@localhost",
        )
        self.root = root
        self.git("init", "-q")
        # A detached auto-gc after a 20k-object commit would run on into the
        # next measurement (ours or its own); keep both measurements clean.
        self.git("config", "gc.auto", "0")

    def git(self, *args: str) -> str:
        """Run git in the shadow repository."""
        proc = subprocess.run(
            ["git", *args], cwd=self.root, env=self.env, capture_output=True, check=True
        )
        return proc.stdout.decode().strip()

    def commit(self) -> str:
        """``git add -A && git commit``; the new commit id."""
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "--no-verify", "-m", "checkpoint")
        return self.git("rev-parse", "HEAD")

    def restore(self, commit: str) -> None:
        """``git reset --hard COMMIT && git clean -fd``."""
        self.git("reset", "-q", "--hard", commit)
        self.git("clean", "-fdq")


def change_ten(root: Path, paths: list[Path], rng: random.Random, tag: int) -> None:
    """Six edits, two new files, one deletion, one chmod: ten changed files."""
    picks = rng.sample(paths, 9)
    for p in picks[:6]:
        with open(p, "a") as f:
            f.write(f"edited_{tag} = True\n")
    for n in range(2):
        (root / "pkg00" / f"new_{tag}_{n}.py").write_text(f"new = {tag}\n")
    picks[6].unlink()
    picks[7].chmod(0o755 if not picks[7].stat().st_mode & 0o100 else 0o644)


def main() -> None:
    """Run the checkpoint benchmarks and print their JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tandem-bench-cp-") as tmp:
        base = Path(tmp)
        root = base / "ws"
        root.mkdir()
        paths = generate(root, args.files)
        subprocess.run(["sync"], check=False)

        # First checkpoint: a fresh store each run (3 runs: it writes 20k objects).
        # Writing 20k objects leaves seconds of writeback behind it, and the
        # first big write after the tree was generated is slow whoever does
        # it: sync before each measurement, discard a warm-up round, and
        # alternate who goes first.
        firsts, shadow_firsts = [], []
        for n in range(3):
            home = base / f"home-first-{n}"
            shadow = Shadow(base / f"shadow-first-{n}", root)
            order = ["tandem", "shadow"] if n % 2 == 0 else ["shadow", "tandem"]
            for who in order:
                subprocess.run(["sync"], check=False)
                if who == "tandem":
                    ms = timed_ms(lambda h=home: Checkpointer(h, root).snapshot("first"))
                    firsts.append(ms)
                else:
                    shadow_firsts.append(timed_ms(shadow.commit))
            shutil.rmtree(home)
            shutil.rmtree(base / f"shadow-first-{n}")
        del firsts[0], shadow_firsts[0]  # the warm-up round
        emit(
            f"checkpoint first ({args.files} files)",
            statistics.median(firsts),
            "shadow repo git add -A && git commit",
            statistics.median(shadow_firsts),
            None,
        )

        cp = Checkpointer(base / "home", root)
        shadow = Shadow(base / "shadow", root)
        cp.snapshot("base")
        shadow.commit()
        incr, shadow_incr, restores, shadow_restores = [], [], [], []
        for run in range(args.runs):
            live = [p for p in paths if p.exists()]
            before: Checkpoint = cp.snapshot(f"before {run}")
            shadow_before = shadow.commit()
            seed = 1000 + run
            change_ten(root, live, random.Random(seed), run)
            # Same ten changes seen by both: measure both captures.
            incr.append(timed_ms(lambda r=run: cp.snapshot(f"after {r}")))
            shadow_incr.append(timed_ms(shadow.commit))
            restores.append(timed_ms(lambda b=before: cp.restore(b)))
            # Redo the identical change for the anchor, then let it undo it.
            change_ten(root, live, random.Random(seed), run)
            shadow.commit()
            shadow_restores.append(timed_ms(lambda c=shadow_before: shadow.restore(c)))
            cp.restore(before)  # both back at the same state for the next run
        unchanged = [timed_ms(lambda: cp.snapshot("unchanged")) for _ in range(args.runs)]
        shadow_unchanged = [timed_ms(shadow.commit) for _ in range(args.runs)]
        emit(
            f"checkpoint unchanged ({args.files} files)",
            statistics.median(unchanged),
            "shadow repo git add -A && git commit",
            statistics.median(shadow_unchanged),
            None,
        )
        emit(
            f"checkpoint incremental (10 changed of {args.files})",
            statistics.median(incr),
            "shadow repo git add -A && git commit",
            statistics.median(shadow_incr),
            250,
        )
        emit(
            f"checkpoint restore (10 changed of {args.files})",
            statistics.median(restores),
            "shadow repo git reset --hard && git clean -fd",
            statistics.median(shadow_restores),
            500,
        )


if __name__ == "__main__":
    main()
