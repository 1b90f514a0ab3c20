"""A generated monorepo for the scale benchmarks, cached under ``.cache/monorepo/``.

`ensure_tree` builds it once (deterministic: one seed, fixed git dates) and
returns the cached copy; `working_copy` copies it for a run that changes
files (``cp -a``), so the cache is never modified. The tree:

* ``FILES`` (100,000) files in ``LEAVES`` (5,000) leaf folders,
  ``pkgNN/modNN/subN`` (50 × 10 × 10), 20 files each, plus the folders
  between them;
* source-like text files (``.py``, ``.ts``, ``.md``), 5–80 lines;
* 1 % binaries (``.png``, random bytes, 1–16 KB), captured as blobs;
* 5 % ignored: ``.pyc`` files beside the sources and a ``build/`` folder in
  every tenth package (the root ``.gitignore``), and ``*.log`` through a
  ``.gitignore`` of every package's ``mod00``;
* one nested git repository, ``pkg49/mod09`` (its 200 files, committed),
  which tandem captures as its own region.

Disk: about 200 files a folder of 1.5 KB on average; the cache is ~420 MB
on a 4 KB-block file system (``du``), each working copy the same again.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "monorepo"
FILES = 100_000
PACKAGES, MODULES, SUBS = 50, 10, 10
LEAVES = PACKAGES * MODULES * SUBS
VERSION = 1
"""Bump when the shape changes: the cache key holds it."""
NESTED = "pkg49/mod09"

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "gen", "GIT_AUTHOR_EMAIL": "gen@localhost",
    "GIT_COMMITTER_NAME": "gen", "GIT_COMMITTER_EMAIL": "gen@localhost",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


def leaf(i: int) -> str:
    """The leaf folder of file I (relative)."""
    n = i % LEAVES
    return f"pkg{n // (MODULES * SUBS):02d}/mod{n // SUBS % MODULES:02d}/sub{n % SUBS}"


def _write(root: Path, files: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    counts = {"text": 0, "binary": 0, "ignored": 0}
    (root / ".gitignore").write_text("*.pyc\nbuild/\nnode_modules/\n")
    for p in range(PACKAGES):
        d = root / f"pkg{p:02d}" / "mod00"
        d.mkdir(parents=True, exist_ok=True)
        (d / ".gitignore").write_text("*.log\n")
    for i in range(files):
        d = root / leaf(i)
        d.mkdir(parents=True, exist_ok=True)
        kind = rng.random()
        if kind < 0.01:
            (d / f"img{i:06d}.png").write_bytes(rng.randbytes(rng.randint(1024, 16384)))
            counts["binary"] += 1
        elif kind < 0.06:
            counts["ignored"] += 1
            pkg = (i % LEAVES) // (MODULES * SUBS)
            if pkg % 10 == 0:
                out = root / f"pkg{pkg:02d}" / "build"
                out.mkdir(exist_ok=True)
                (out / f"out{i:06d}.o").write_bytes(rng.randbytes(512))
            elif "/mod00/" in f"/{leaf(i)}/":
                (d / f"run{i:06d}.log").write_text(f"log line {i}\n" * 8)
            else:
                (d / f"file{i:06d}.pyc").write_bytes(rng.randbytes(256))
        else:
            ext = ("py", "py", "ts", "md")[i % 4]
            lines = rng.randint(5, 80)
            (d / f"file{i:06d}.{ext}").write_text(
                "".join(f"value_{i}_{n} = {n * 7 % 101}  # line {n}\n" for n in range(lines)))
            counts["text"] += 1
    nested = root / NESTED
    nested.mkdir(parents=True, exist_ok=True)
    (nested / "README.md").write_text("A nested repository.\n")  # a small tree reaches none
    subprocess.run(["git", "init", "-q", str(nested)], check=True, env={**os.environ, **_GIT_ENV})
    for args in (["add", "-A"], ["commit", "-q", "--no-verify", "-m", "nested"]):
        subprocess.run(["git", *args], cwd=nested, check=True, capture_output=True,
                       env={**os.environ, **_GIT_ENV})
    return counts


def ensure_tree(files: int = FILES, seed: int = 100) -> Path:
    """The cached tree for FILES and SEED, generated on the first call only."""
    key = CACHE / f"v{VERSION}-{files}-{seed}"
    tree = key / "tree"
    stamp = key / "complete.json"
    if stamp.exists():
        return tree
    if key.exists():
        shutil.rmtree(key)  # an interrupted generation
    tree.mkdir(parents=True)
    counts = _write(tree, files, seed)
    subprocess.run(["sync"], check=False)
    stamp.write_text(json.dumps({"files": files, "seed": seed, "leaves": LEAVES, **counts}))
    return tree


def working_copy(tree: Path, dest: Path) -> Path:
    """A copy of TREE at DEST (``cp -a``: modes, times, the nested ``.git``)."""
    subprocess.run(["cp", "-a", str(tree), str(dest)], check=True)
    return dest
