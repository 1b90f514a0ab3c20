"""Fixtures of the ACP provider tests: ``tests/`` on sys.path for the fakes
and the adapter installer."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
