"""Read tools stay inside the root: links out, FIFOs, devices, ReDoS, huge files.

Each hostile call runs in a child process (`hostile.run_tool`) so a broken
tool fails with "hung" or "crashed" instead of freezing or exhausting the
test machine.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from .hostile import plant, run_tool


@pytest.fixture
def hostile(root: Path, tmp_path: Path) -> Path:
    plant(root, tmp_path / "home")
    return root


def test_grep_never_returns_what_a_link_out_of_the_root_points_at(hostile: Path) -> None:
    got = run_tool(hostile, "grep", {"pattern": "OUTSIDE"})
    assert got["status"] == "completed", got
    assert "SECRET" not in got["output"] and "PRIVATE KEY" not in got["output"]
    assert "(no matches)" in got["output"]
    # Each skipped entry is named, with the reason.
    for name in ("link", "deploy_key", "pipe", "zero"):
        assert name in got["output"], got["output"]
    assert "outside the workspace root" in got["output"]


def test_grep_on_a_link_given_by_name_is_refused(hostile: Path) -> None:
    got = run_tool(hostile, "grep", {"pattern": "OUTSIDE", "path": "deploy_key"})
    assert got["status"] == "failed" and "outside the workspace root" in got["output"]


@pytest.mark.parametrize("pattern", ["link_dir/*", "**", "**/*", "*", "link_dir/**/*"])
def test_list_files_globs_never_list_outside(hostile: Path, pattern: str) -> None:
    got = run_tool(hostile, "list_files", {"pattern": pattern})
    assert got["status"] == "completed", got
    listed = got["output"].split("\n[skipped")[0].splitlines()
    assert "link_dir/secret" not in got["output"]
    assert not any(n.startswith("link_dir/") for n in listed), listed
    assert not {"link", "deploy_key", "zero"} & set(listed), listed


def test_plain_listing_names_but_does_not_list_links_out(hostile: Path) -> None:
    got = run_tool(hostile, "list_files", {})
    listed = got["output"].split("\n[skipped")[0].splitlines()
    assert listed == ["a.txt"], got["output"]
    assert "link_dir" in got["output"] and "outside the workspace root" in got["output"]


def test_fifo_is_skipped_and_never_opened(hostile: Path) -> None:
    started = time.monotonic()
    got = run_tool(hostile, "read_file", {"path": "pipe"}, timeout=10)
    assert got["status"] == "failed" and "FIFO" in got["output"], got
    got = run_tool(hostile, "grep", {"pattern": "x", "path": "pipe"}, timeout=10)
    assert got["status"] == "failed" and "FIFO" in got["output"], got
    assert time.monotonic() - started < 10


def test_link_to_dev_zero_is_skipped(hostile: Path) -> None:
    got = run_tool(hostile, "grep", {"pattern": "x", "glob": "zero"}, timeout=15)
    assert got["status"] == "completed", got
    assert "zero" in got["output"] and "(no matches)" in got["output"]
    assert got["hwm_after"] - got["hwm_before"] < 50 * 1024
    got = run_tool(hostile, "read_file", {"path": "zero"}, timeout=15)
    assert got["status"] == "failed" and "outside the workspace root" in got["output"]


def test_redos_pattern_runs_in_linear_time(root: Path) -> None:
    (root / "evil.txt").write_text(("a" * 40 + "b\n") * 200 + "aaaa\n")
    started = time.monotonic()
    got = run_tool(root, "grep", {"pattern": "^(a+)+$"}, timeout=20)
    assert got["status"] == "completed", got
    assert got["output"] == "evil.txt:201: aaaa"
    assert time.monotonic() - started < 15


def test_read_file_with_a_limit_streams_a_huge_file(root: Path) -> None:
    huge = root / "huge.log"
    with open(huge, "wb") as f:
        f.write(b"".join(b"line %d of the log\n" % i for i in range(1, 2001)))
        f.truncate(300 * 1024 * 1024)  # sparse: 300 MB on paper, no disk used
    got = run_tool(root, "read_file", {"path": "huge.log", "limit": 5}, timeout=20)
    assert got["status"] == "completed", got
    assert got["output"].splitlines() == [f"{i:6}\tline {i} of the log" for i in range(1, 6)]
    growth_kb = got["hwm_after"] - got["hwm_before"]
    assert growth_kb < 50 * 1024, f"peak RSS grew {growth_kb} KiB reading 5 lines"


def test_read_file_pages_deep_into_a_huge_file_in_bounded_memory(root: Path) -> None:
    huge = root / "huge.log"
    with open(huge, "wb") as f:
        f.write(b"".join(b"row %d\n" % i for i in range(1, 2001)))
        f.seek(64 * 1024 * 1024)  # a 64 MB hole of NUL bytes: one endless line
        f.write(b"\nthe end\n")
    got = run_tool(root, "read_file", {"path": "huge.log", "offset": 2001, "limit": 3},
                   timeout=30)
    assert got["status"] == "completed", got
    lines = got["output"].splitlines()
    assert lines[0].startswith("  2001\t") and "[line truncated" in lines[0]
    assert lines[1:] == ["  2002\tthe end"]
    assert got["hwm_after"] - got["hwm_before"] < 50 * 1024


def test_grep_caps_bytes_per_file_and_names_what_it_skipped(root: Path) -> None:
    (root / "big.txt").write_bytes(b"needle\n" + b"x" * (3 * 1024 * 1024) + b"\n")
    (root / "small.txt").write_text("needle\n")
    got = run_tool(root, "grep", {"pattern": "needle"})
    assert got["output"].splitlines()[0] == "small.txt:1: needle"
    assert "big.txt" in got["output"] and "larger than" in got["output"]


def test_grep_stops_at_max_matches(root: Path) -> None:
    (root / "many.txt").write_text("hit\n" * 2000)
    got = run_tool(root, "grep", {"pattern": "hit"})
    lines = got["output"].splitlines()
    assert len([n for n in lines if n.startswith("many.txt:")]) == 500
    assert "[stopped after 500 matches]" in lines


def test_a_call_over_its_time_budget_is_a_clear_error(root: Path) -> None:
    for i in range(300):
        (root / f"f{i}.txt").write_text("x\n" * 1000)
    got = run_tool(root, "grep", {"pattern": "y"}, tool_timeout=0.0001)
    assert got["status"] == "failed", got
    assert "time budget" in got["output"] and "grep" in got["output"]


def test_symlinked_folder_inside_the_root_is_not_followed(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "m.py").write_text("needle\n")
    (root / "loop").symlink_to(root)  # a cycle a following walk would never leave
    got = run_tool(root, "grep", {"pattern": "needle"})
    assert got["output"].splitlines()[0] == "src/m.py:1: needle"
    assert "loop/" not in got["output"].split("\n[skipped")[0]


def test_special_file_listing_is_named(root: Path) -> None:
    os.mkfifo(root / "fifo")
    got = run_tool(root, "list_files", {"pattern": "**/*"})
    assert got["output"].splitlines()[0] == "a.txt"
    assert "fifo" in got["output"] and "FIFO" in got["output"]
