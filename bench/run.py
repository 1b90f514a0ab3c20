"""Run every benchmark and print its JSON lines (``make bench``).

Python benchmarks are ``bench/bench_*.py`` (run with this interpreter);
Emacs benchmarks are ``bench/bench_*.el`` with a ``bench-*-main`` function
of the same stem (run in batch Emacs). Each prints one JSON object per line:
a figure, its anchor measured in the same run, and the target. Lines that
are not JSON (progress, warnings) go to stderr so stdout stays parseable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def _emacs_command(script: Path) -> list[str]:
    main = "bench-" + script.stem.removeprefix("bench_").replace("_", "-") + "-main"
    # --no-init-file, not -Q: Debian's site start puts epc.el (the anchor)
    # and markdown-mode on the load path.
    return ["emacs", "--batch", "--no-init-file", "-L", str(ROOT / "elisp"),
            "-L", str(BENCH), "-l", str(script), "-f", main]


def run(script: Path, only: set[str]) -> int:
    """Run one benchmark script; echo its JSON lines; return its exit status."""
    if only and script.stem not in only:
        return 0
    cmd = ([sys.executable, str(script)] if script.suffix == ".py" else _emacs_command(script))
    # TANDEM_BENCH_RUN/ONLY: an opt-in script (bench_monorepo) runs when named.
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), TANDEM_BENCH_RUN="1",
               TANDEM_BENCH_ONLY=",".join(sorted(only)))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    for line in proc.stdout.splitlines():
        try:
            json.loads(line)
        except ValueError:
            print(line, file=sys.stderr)
            continue
        print(line, flush=True)
    if proc.returncode:
        print(f"{script.name} failed ({proc.returncode}):\n{proc.stderr[-2000:]}",
              file=sys.stderr)
    return proc.returncode


def wanted(args: list[str]) -> set[str]:
    """The script stems ARGS name (``startup`` or ``bench_startup``, comma lists too)."""
    names = {name for arg in args for name in arg.split(",") if name}
    return {name if name.startswith("bench_") else "bench_" + name for name in names}


def main() -> int:
    """Run the benchmarks named on the command line (stems), or all of them."""
    only = wanted(sys.argv[1:])
    scripts = sorted(BENCH.glob("bench_*.py")) + sorted(BENCH.glob("bench_*.el"))
    failures = sum(1 for s in scripts if run(s, only))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
