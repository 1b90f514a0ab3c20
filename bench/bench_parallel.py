"""Parallel-session benchmark: ``parallel/create`` on a 20k-file repository.

Figure: the wall time of `ParallelService.create` (``git worktree add
--no-checkout``, the tree's own store borrowing the repository's objects,
the checkout through that store, beside it the main tree's incremental
checkpoint and the uncommitted-changes check, then the base checkpoint
kept from the checkout's index, the journal and the record) beside its
anchor measured in the
same run on the same repository: a plain ``git worktree add -b B DIR HEAD``
(git's own checkout, nothing else). Target: within 1.3× the anchor. The
main tree has been checkpointed once before (a project with a tandem
session has), so its capture is incremental, as in use. The two are
alternated, ROUNDS each, after an untimed warm-up of each; medians.
Prints JSON lines: the create in ms beside the anchor, and the ratio
(``x``). Run: ``.venv/bin/python bench/bench_parallel.py`` (``--files N``
for a smaller repository).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from bench_checkpoints import generate  # noqa: E402

TARGET_RATIO = 1.3


def _git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@b")
    return env


def main() -> None:
    """Run the benchmark and print its JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tandem-bench-par-") as tmp:
        base = Path(tmp)
        # Nothing of the user's: HOME, XDG and TANDEM_HOME all inside the temporary folder.
        os.environ.update(HOME=str(base / "h"), XDG_CONFIG_HOME=str(base / "h/c"),
                          XDG_DATA_HOME=str(base / "h/d"), TANDEM_HOME=str(base / "th"))
        from tandem.app import App

        root = base / "proj"
        root.mkdir()
        generate(root, args.files)
        env = _git_env(base / "h")

        def git(*a: str) -> None:
            subprocess.run(["git", *a], cwd=root, env=env, check=True, capture_output=True)

        git("init", "-q", "-b", "main")
        git("add", "-A")
        git("commit", "-qm", "files")
        app = App(home=base / "th")
        app.checkpoints.for_root(root).snapshot("the project's session")
        out = base / "trees"
        subprocess.run(["sync"], check=False)
        ours: list[float] = []
        anchor: list[float] = []
        for n in range(args.rounds + 1):
            order = ("tandem", "anchor") if n % 2 == 0 else ("anchor", "tandem")
            for who in order:
                t = time.perf_counter()
                if who == "tandem":
                    app.parallel.create(str(root), f"t{n}", None, False, str(out))
                else:
                    git("worktree", "add", "-q", "-b", f"anchor{n}", str(out / f"a{n}"), "HEAD")
                ms = (time.perf_counter() - t) * 1000
                if n:  # round 0 warms both up
                    (ours if who == "tandem" else anchor).append(ms)
                subprocess.run(["sync"], check=False)
        value, anchor_ms = statistics.median(ours), statistics.median(anchor)
        load = os.getloadavg()[0]
        print(json.dumps({"bench": f"parallel_create_{args.files}_files", "value": round(value, 1),
                          "unit": "ms", "anchor": "git worktree add (with checkout)",
                          "anchor_value": round(anchor_ms, 1), "target": None,
                          "rounds": len(ours), "load": round(load, 1),
                          "values": [round(v) for v in ours],
                          "anchor_values": [round(v) for v in anchor]}), flush=True)
        print(json.dumps({"bench": f"parallel_create_{args.files}_files_ratio",
                          "value": round(value / anchor_ms, 2), "unit": "x",
                          "anchor": "git worktree add (with checkout)", "anchor_value": 1.0,
                          "target": TARGET_RATIO, "load": round(load, 1)}), flush=True)


if __name__ == "__main__":
    main()
