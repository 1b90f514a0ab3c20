"""Private state and secrets at start-up (trust boundaries): the re-exec and the mode walk.

* ``secrets_reexec_start``: a ``tandem`` command started from a shell that
  exports an API key re-executes itself once (the key leaves the initial
  environment); anchor: the same command without a key (no re-exec).
* ``private_walk_20k``: `tandem.store.home.prepare_home` walking a home of 20,000
  files already private (what a start without the marker does, in a background
  thread); anchor: ``os.walk`` with an ``lstat`` of each entry, same tree.

Run: ``.venv/bin/python bench/bench_private.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from benchlib import emit, median_ms  # noqa: E402
from tandem import secrets  # noqa: E402
from tandem.store.home import prepare_home  # noqa: E402


def _start(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "tandem.cli", "--version"], env=env, check=True,
                   stdout=subprocess.DEVNULL, cwd=ROOT)


def bench_reexec() -> None:
    plain = {k: v for k, v in os.environ.items() if not secrets.is_secret_name(k)}
    plain["PYTHONPATH"] = str(ROOT / "python")
    keyed = dict(plain, OPENAI_API_KEY="sk-bench", ANTHROPIC_API_KEY="sk-bench-2")
    anchor = median_ms(lambda: _start(plain), runs=11)
    value = median_ms(lambda: _start(keyed), runs=11)
    emit("secrets_reexec_start", value, "same command, no key in the environment", anchor, None,
         digits=1)


def bench_walk() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        for d in range(200):
            folder = home / "checkpoints" / "w" / "repo" / "objects" / f"{d:02x}"
            folder.mkdir(parents=True)
            for f in range(100):
                (folder / f"{f:038x}").write_bytes(b"x")
        prepare_home(home)

        def walk() -> None:
            for top, dirs, files in os.walk(home):
                for name in dirs + files:
                    os.lstat(os.path.join(top, name))

        anchor = median_ms(walk, runs=5)
        value = median_ms(lambda: prepare_home(home, force=True), runs=5)
    emit("private_walk_20k", value, "os.walk + lstat of the same tree", anchor, None, digits=1)


if __name__ == "__main__":
    bench_reexec()
    bench_walk()
