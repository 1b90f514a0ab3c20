"""`bench/compare.py`: the comparison on recorded lines, and one real run of both sides."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_compare", ROOT / "bench" / "compare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


compare = _load()


def _line(name: str, value: float, unit: str = "ms") -> str:
    return (f'{{"bench": "{name}", "value": {value}, "unit": "{unit}", "anchor": "a", '
            f'"anchor_value": 1.0, "target": null}}')


# Two rounds of each side as `make bench` printed them. The base is an
# older commit: it lacks one figure and has one the tree dropped.
BASE_ROUNDS = [
    [_line("string_100kb_roundtrip", 4.0), _line("list_10k_plists_reply", 50.0),
     _line("view_open_5k_whole_history", 300), _line("old_only", 1.0),
     _line("fsync_after", 0.0), "bench_view.el: compiling", _line("backend_rss", 50.0, "MB")],
    [_line("string_100kb_roundtrip", 4.5), _line("list_10k_plists_reply", 60.0),
     _line("view_open_5k_whole_history", 340), _line("old_only", 1.1),
     _line("fsync_after", 0.0), _line("backend_rss", 51.0, "MB")],
]
TREE_ROUNDS = [
    [_line("string_100kb_roundtrip", 10.9), _line("list_10k_plists_reply", 40.0),
     _line("view_open_5k_whole_history", 420), _line("new_only", 2.0),
     _line("fsync_after", 0.1), '{"bench": "skipped_one", "skipped": "no agent-server"}',
     _line("backend_rss", 50.5, "MB"), _line("backend_rss", 95.0, "MB")],
    [_line("string_100kb_roundtrip", 17.6), _line("list_10k_plists_reply", 45.0),
     _line("view_open_5k_whole_history", 330), _line("new_only", 2.1),
     _line("fsync_after", 0.1), _line("backend_rss", 50.8, "MB")],
]

GOLDEN = """\
figure                      unit  base median (range)  tree median (range)  ratio
string_100kb_roundtrip      ms    4.25 (4–4.5)         14.25 (10.9–17.6)    3.35   WORSE
list_10k_plists_reply       ms    55 (50–60)           42.5 (40–45)         0.77
view_open_5k_whole_history  ms    320 (300–340)        375 (330–420)        1.17
fsync_after                 ms    0 (0–0)              0.1 (0.1–0.1)        —
backend_rss                 MB    50.5 (50–51)         50.65 (50.5–50.8)    1.00
only in base: old_only
only in tree: backend_rss #2, new_only
1 of 5 figures worse beyond their spread (tree's best > 1.25 × base's worst): \
string_100kb_roundtrip"""


def _rounds(recorded: list[list[str]]) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {}
    for lines in recorded:
        for name, line in compare.parse_lines(lines).items():
            out.setdefault(name, []).append(line)
    return out


def test_recorded_rounds_render_the_golden_table() -> None:
    result = compare.compare(_rounds(BASE_ROUNDS), _rounds(TREE_ROUNDS))
    assert compare.render(result) == GOLDEN
    assert [r.name for r in result.flagged] == ["string_100kb_roundtrip"]


def test_flag_needs_the_best_round_beyond_the_worst() -> None:
    row = compare.Row
    # Medians 1.5x apart, but the ranges overlap: possibly noise, not flagged.
    overlapping = row("x", "ms", (10.0, 20.0), (12.0, 30.0))
    assert not overlapping.flagged and overlapping.verdict == "worse?"
    # Every tree round over 1.25x every base round.
    assert row("x", "ms", (10.0, 11.0), (13.8, 14.0)).flagged
    # Just under: 13.75 is exactly 1.25 x 11.
    assert not row("x", "ms", (10.0, 11.0), (13.75, 20.0)).flagged
    # Better is never flagged, and a zero base has no ratio.
    assert row("x", "ms", (10.0, 11.0), (5.0, 6.0)).verdict == ""
    assert row("x", "ms", (0.0, 0.0), (1.0, 1.0)).ratio is None


def test_lines_of_other_shapes_are_skipped() -> None:
    figures = compare.parse_lines(["not json", "[1, 2]", '{"bench": "a"}',
                                   '{"bench": "b", "value": "fast"}', _line("c", 1.5)])
    assert list(figures) == ["c"] and figures["c"].value == 1.5


def test_a_real_run_of_both_sides() -> None:
    """BASE=HEAD, one fast benchmark: each side runs its own checkout, the copy is removed."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "compare.py"), "--base", "HEAD",
         "--only", "wire_context"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = proc.stdout
    # Both sides are one commit, but the machine is shared: a noisy round may
    # flag a figure (exit 1). Only a failed run (exit 2) is a defect here.
    assert proc.returncode in (0, 1), out + proc.stderr
    assert [line[:5] for line in out.splitlines() if line[:5] in ("base:", "tree:")] == [
        "base:", "tree:"]
    runs = [line.split("runs ", 1)[1] for line in out.splitlines() if "runs " in line]
    assert len(runs) == 2
    assert "/.cache/bench-base-" in runs[0] and str(ROOT / "python" / "tandem") in runs[1]
    assert "request_body_turn_1000_openai_kept_context" in out
    assert "only in" not in out
    summary = re.search(r"^(\d) of 2 figures worse", out, re.M)
    assert summary is not None, out
    assert (int(summary.group(1)) > 0) == (proc.returncode == 1), out
    base_copy = Path(runs[0].split("/python/tandem", 1)[0])
    assert base_copy.parent == ROOT / ".cache" and not base_copy.exists()
