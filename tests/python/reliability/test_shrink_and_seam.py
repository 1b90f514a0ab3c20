"""The soak's shrinker and the backend's fault seam, on their own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from soak.ops import generate
from soak.report import shrink

from tandem import faults


def test_shrink_finds_the_two_operations_that_fail_together() -> None:
    ops = generate(11, 200, 3)
    a, b = ops[37], ops[151]
    runs = []

    def fails(sub: list[tuple[str, int, int]]) -> bool:
        runs.append(len(sub))
        return a in sub and b in sub

    assert shrink(11, ops, fails, budget=200) == [a, b]
    assert len(runs) < 200


def _python(code: str, spec: str, log: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TANDEM_FAULTS=spec, TANDEM_FAULTS_LOG=str(log))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def test_the_seam_is_off_unless_armed_and_fires_at_the_nth_hit(tmp_path: Path) -> None:
    assert not faults.ENABLED  # the test run itself has no plan
    faults.point("journal.write")  # a no-op
    log = tmp_path / "fired"
    code = ("from tandem import faults\n"
            "for i in range(3):\n"
            "    print(i, flush=True); faults.point('journal.write')\n")
    killed = _python(code, "journal.write=kill@2", log)
    assert killed.returncode == 137 and killed.stdout.split() == ["0", "1"]
    assert log.read_text() == "journal.write kill\n"
    full = _python(code, "journal.write=enospc@3", log)
    assert full.returncode == 1 and "No space left on device" in full.stderr
    wrong = _python("import tandem.faults", "no.such.point=kill", log)
    assert wrong.returncode == 1 and "no fault point 'no.such.point'" in wrong.stderr
