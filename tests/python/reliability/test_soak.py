"""The soak for a minute: the real backend, injected faults, every invariant, no violation.

``make soak`` runs it longer (docs/reliability.md). Here a fixed seed runs
for 60 seconds; the report is printed, and any violation fails the test
with the seed and the operation it came at (``make soak SEED=… OPS=…``
reproduces and shrinks it).
"""

from __future__ import annotations

from pathlib import Path

from soak.driver import PROJECTS, run
from soak.ops import generate

SEED = 20261202
SECONDS = 60.0


def test_soak_one_minute_with_faults_has_no_violation(tmp_path: Path) -> None:
    stats = run(SEED, generate(SEED, 100_000, PROJECTS), tmp_path, seconds=SECONDS)
    print(stats.text())
    assert stats.ops >= 50, f"only {stats.ops} operations ran in {SECONDS} s"
    assert stats.fault_count >= 3, "no fault was injected: the soak proves nothing"
    assert stats.checks >= 3
    assert not stats.violations, stats.text()
