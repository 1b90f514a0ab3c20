"""What every Python benchmark shares: one JSON line per figure, medians.

A figure is printed beside its anchor, measured in the same run, and its
target (None when the issue sets none); `bench/run.py` collects the lines.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable


def emit(bench: str, value: float, anchor: str, anchor_value: float, target: float | None,
         digits: int = 3) -> None:
    """Print one result line (milliseconds, rounded to DIGITS)."""
    print(json.dumps({"bench": bench, "value": round(value, digits), "unit": "ms",
                      "anchor": anchor, "anchor_value": round(anchor_value, digits),
                      "target": target}), flush=True)


def median_ms(fn: Callable[[], object], runs: int = 9) -> float:
    """Median wall time of RUNS calls of FN, in milliseconds."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def alternating_ms(fn: Callable[[], object], anchor: Callable[[], object], runs: int = 9,
                   before: Callable[[], object] | None = None) -> tuple[float, float]:
    """Median wall times of FN and ANCHOR, called in turn RUNS times each (ms).

    On a shared machine the load changes between two series; alternating
    gives both the same. BEFORE, if given, runs untimed before each FN call.
    """
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for which, call in enumerate((fn, anchor)):
            if which == 0 and before is not None:
                before()
            t = time.perf_counter()
            call()
            times[which].append((time.perf_counter() - t) * 1000)
    return statistics.median(times[0]), statistics.median(times[1])
