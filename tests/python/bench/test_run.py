"""`bench/run.py`: which scripts ``make bench ONLY=…`` runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_only_takes_stems_with_or_without_the_prefix_and_comma_lists() -> None:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    assert spec and spec.loader
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    assert run.wanted(["startup,view", "bench_turn"]) == {"bench_startup", "bench_view",
                                                          "bench_turn"}
    assert run.wanted([]) == set()
