"""Gaps: files over the size cap and unreadable paths are named, never skipped silently."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cp_helpers import write

from tandem.checkpoints import Checkpoint, Checkpointer

Make = Callable[..., Checkpointer]
CAP = 1024


def test_untracked_large_file_is_a_gap(root: Path, make: Make) -> None:
    write(root, "small.txt", "s\n")
    write(root, "data/huge.bin", b"\1" * (CAP + 1))
    cp = make(root, size_cap=CAP)
    start = cp.snapshot("pre")
    assert cp.paths(start) == ["small.txt"]
    [gap] = start.gaps
    assert (gap.path, gap.reason, gap.size) == ("data/huge.bin", "too-large", CAP + 1)
    # Unchanged, the gap does not make a patch incomplete...
    assert cp.diff(start).completeness == "no-changes"
    # ...changed, it does, and it is named.
    write(root, "data/huge.bin", b"\2" * (CAP + 5))
    patch = cp.diff(start)
    assert patch.completeness == "incomplete" and patch.files == []
    assert [(g.kind, g.path) for g in patch.gaps] == [("skipped-file-changed", "data/huge.bin")]
    # A restore leaves what it could not capture alone, and says so.
    plan = cp.plan_restore(start)
    assert plan.empty
    assert [(g.path, g.kind) for g in plan.gaps] == [("data/huge.bin", "gap-at-checkpoint")]
    cp.restore(start)
    assert (root / "data/huge.bin").read_bytes() == b"\2" * (CAP + 5)


def test_file_that_grows_past_the_cap(root: Path, make: Make) -> None:
    write(root, "log.txt", "short\n")
    cp = make(root, size_cap=CAP)
    start = cp.snapshot("pre")
    write(root, "log.txt", "x" * (CAP * 2))
    write(root, "other.txt", "o\n")
    patch = cp.diff(start)
    # Not reported as deleted: it is a gap now, named as such.
    assert [(f.path, f.status) for f in patch.files] == [("other.txt", "created")]
    assert patch.completeness == "incomplete"
    assert patch.gaps[0].path == "log.txt" and "became too large" in patch.gaps[0].detail
    plan = cp.plan_restore(start)
    assert plan.to_restore == [] and plan.to_delete == ["other.txt"]
    assert [(g.path, g.kind) for g in plan.gaps] == [("log.txt", "gap-now")]
    cp.restore(start)
    assert len((root / "log.txt").read_text()) == CAP * 2  # no backup possible: untouched
    assert not (root / "other.txt").exists()


def test_created_large_file_is_not_deleted_by_restore(root: Path, make: Make) -> None:
    write(root, "a.txt", "a\n")
    cp = make(root, size_cap=CAP)
    start = cp.snapshot("pre")
    write(root, "dump.sql", "-" * (CAP + 1))
    plan = cp.plan_restore(start)
    assert plan.empty and [(g.path, g.kind) for g in plan.gaps] == [("dump.sql", "gap-now")]
    cp.restore(start)
    assert (root / "dump.sql").exists()


_PROBE = """
import sys
from pathlib import Path
from tandem.checkpoints import Checkpointer
cp = Checkpointer(Path(sys.argv[1]), Path(sys.argv[2]))
first = cp.snapshot("pre")
print(first.model_dump_json())
print(json.dumps(cp.paths(first)))
""".replace("import sys", "import sys, json")


def _unprivileged(args: list[str]) -> list[str]:
    """Run ARGS so that file permissions apply (root bypasses them otherwise)."""
    if os.geteuid() != 0:
        return args
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a file unreadable")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", *args]


def test_unreadable_file_and_directory_are_gaps(home: Path, root: Path) -> None:
    write(root, "ok.txt", "fine\n")
    write(root, "secret.txt", "no\n", mode=0o000)
    write(root, "locked/inside.txt", "hidden\n")
    (root / "locked").chmod(0o000)
    try:
        proc = subprocess.run(
            _unprivileged([sys.executable, "-c", _PROBE, str(home), str(root)]),
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        (root / "locked").chmod(0o755)
    lines = proc.stdout.splitlines()
    checkpoint = Checkpoint.model_validate_json(lines[0])
    assert json.loads(lines[1]) == ["ok.txt"]
    assert [(g.path, g.reason) for g in checkpoint.gaps] == [
        ("locked/", "unreadable"),
        ("secret.txt", "unreadable"),
    ]


_DIFF_PROBE = """
import sys
from pathlib import Path
from tandem.checkpoints import Checkpointer
cp = Checkpointer(Path(sys.argv[1]), Path(sys.argv[2]))
print(cp.diff(sys.argv[3]).model_dump_json())
"""


def test_file_that_becomes_unreadable_is_a_gap_not_a_deletion(
    home: Path, root: Path, make: Make
) -> None:
    from tandem.checkpoints import Patch

    write(root, "notes.txt", "mine\n")
    write(root, "dir/f.txt", "f\n")
    start = make(root).snapshot("pre")
    (root / "notes.txt").chmod(0o000)
    (root / "dir").chmod(0o000)
    try:
        proc = subprocess.run(
            _unprivileged([sys.executable, "-c", _DIFF_PROBE, str(home), str(root), start.id]),
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        (root / "dir").chmod(0o755)
    patch = Patch.model_validate_json(proc.stdout)
    assert patch.files == []
    assert patch.completeness == "incomplete"
    assert [(g.path, g.kind) for g in patch.gaps] == [
        ("dir/", "skipped-file-changed"),
        ("notes.txt", "skipped-file-changed"),
    ]
