"""The soak's figures and the shrinker that finds a short reproducing prefix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .ops import Op


@dataclass
class Stats:
    """What one run did and found."""

    seed: int
    ops: int = 0
    seconds: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)
    """Faults that happened, by ``point action`` (``between-ops kill`` for the driver's)."""
    armed: int = 0
    recoveries: int = 0
    checks: int = 0
    projections: int = 0
    violations: list[str] = field(default_factory=list)
    first_violation_op: int | None = None
    shrunk: list[Op] | None = None
    interactions: list[dict[str, Any]] = field(default_factory=list)
    recovery_seconds: float = 0.0
    """Time spent restarting the backend and reopening its sessions (checks excluded)."""
    check_seconds: float = 0.0
    """Time spent checking invariants."""
    store_misses: int = 0
    """Checks where a moved session's latest turn had no checkpoint in the new store."""
    op_seconds: dict[str, float] = field(default_factory=dict)
    """Time spent in operations, by kind (faults' restarts included in theirs)."""
    check_parts: dict[str, float] = field(default_factory=dict)
    """Time spent in each invariant's check."""

    def timed(self, table: dict[str, float], what: str, seconds: float) -> None:
        """Add SECONDS to WHAT's time in TABLE (`op_seconds` or `check_parts`)."""
        table[what] = table.get(what, 0.0) + seconds

    def fired(self, what: str) -> None:
        """Count one fault WHAT."""
        self.faults[what] = self.faults.get(what, 0) + 1

    @property
    def fault_count(self) -> int:
        """Faults injected in all."""
        return sum(self.faults.values())

    def text(self) -> str:
        """The report, for people."""
        lines = [
            f"soak seed {self.seed}: {self.ops} operations in {self.seconds:.1f} s "
            f"({self.ops / max(self.seconds, 1e-9):.2f} ops/s)",
            f"  faults injected: {self.fault_count} ({self.armed} points armed), "
            f"recoveries: {self.recoveries}, invariant checks: {self.checks}, "
            f"projection checks: {self.projections}",
            f"  time: restarts {self.recovery_seconds:.1f} s, checks {self.check_seconds:.1f} s",
            "  time by operation: " + _seconds(self.op_seconds),
            "  time by check: " + _seconds(self.check_parts),
            f"  store misses after a move (counted, not violations): {self.store_misses}",
            "  operations: " + ", ".join(f"{k} {v}" for k, v in sorted(self.kinds.items())),
            "  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())),
            "  faults by point: " + ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())),
            f"  violations: {len(self.violations)}",
        ]
        lines += [f"    {v}" for v in self.violations[:20]]
        if self.shrunk is not None:
            lines.append(f"  shortest reproducing list ({len(self.shrunk)} ops): {self.shrunk}")
        return "\n".join(lines)


def _seconds(table: dict[str, float]) -> str:
    """TABLE's entries, the longest first."""
    return ", ".join(f"{k} {v:.1f} s" for k, v in sorted(table.items(), key=lambda kv: -kv[1]))


def shrink(seed: int, ops: list[Op], fails: Callable[[list[Op]], bool],
           budget: int = 40) -> list[Op]:
    """A short sub-list of OPS that still FAILS (delta debugging, ddmin; BUDGET runs at most)."""
    n = 2
    runs = 0
    while len(ops) >= 2 and runs < budget:
        size = max(1, len(ops) // n)
        chunks = [ops[i : i + size] for i in range(0, len(ops), size)]
        reduced = False
        for i in range(len(chunks)):
            rest = [op for j, c in enumerate(chunks) if j != i for op in c]
            runs += 1
            if rest and fails(rest):
                ops, n, reduced = rest, max(n - 1, 2), True
                break
            if runs >= budget:
                break
        if not reduced:
            if n >= len(ops):
                break
            n = min(len(ops), n * 2)
    return ops
