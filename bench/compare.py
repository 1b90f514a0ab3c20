"""Compare a base commit's benchmark figures with the working tree's (``make bench-compare``).

The base is checked out into a temporary ``git worktree`` under ``.cache/``
(removed after). Each round runs ``bench/run.py`` of both sides, one after
the other, the side that goes first alternating from round to round, so the
load of a shared machine falls on both alike. Each side runs its own code:
its own ``bench/``, its ``python/`` first on ``PYTHONPATH`` (``run.py`` and
the Emacs client both put it there), its ``elisp/`` on the load path; the
base borrows only this tree's ``.venv`` (the interpreter and the installed
dependencies). Both are printed before the first round.

Every figure is a cost (milliseconds, MB, a CPU share, a ratio to an
anchor): lower is better. A figure is **flagged** when the working tree's
best round is more than ``--limit`` (1.25) times the base's worst round:
worse by more than 25 % even when the noise is given to the base every
time. A median ratio over the limit whose ranges overlap is shown as
"worse?" (possibly noise), not flagged. Exit status 1 when something is
flagged or the working tree's benchmarks fail.

Run: ``.venv/bin/python bench/compare.py --base REF [--rounds N] [--only transport,view]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 1.25


class BenchLine(BaseModel):
    """One JSON line of ``make bench``: the fields a comparison needs.

    Old commits print the same core (``bench``, ``value``, ``unit``) with
    other keys beside it, which are ignored.
    """

    model_config = ConfigDict(extra="ignore")
    bench: str
    value: float
    unit: str = ""


def parse_lines(lines: Iterable[str]) -> dict[str, BenchLine]:
    """Return the figures in LINES by name; lines that are no figure are skipped.

    A name printed twice in one run gets `` #2``, `` #3`` ... so no figure
    hides another.
    """
    figures: dict[str, BenchLine] = {}
    for text in lines:
        try:
            line = BenchLine.model_validate(json.loads(text))
        except (ValueError, ValidationError):
            continue
        name, n = line.bench, 1
        while name in figures:
            n += 1
            name = f"{line.bench} #{n}"
        figures[name] = line.model_copy(update={"bench": name})
    return figures


@dataclass(frozen=True)
class Row:
    """One figure measured on both sides: a value per round each."""

    name: str
    unit: str
    base: tuple[float, ...]
    tree: tuple[float, ...]
    limit: float = LIMIT

    @property
    def ratio(self) -> float | None:
        """Median of the tree over median of the base (None when the base is 0)."""
        base = statistics.median(self.base)
        return statistics.median(self.tree) / base if base > 0 else None

    @property
    def flagged(self) -> bool:
        """Worse beyond the spread: the tree's best above LIMIT times the base's worst."""
        return max(self.base) > 0 and min(self.tree) > self.limit * max(self.base)

    @property
    def verdict(self) -> str:
        """``WORSE`` when flagged, ``worse?`` when only the medians say so, else empty."""
        if self.flagged:
            return "WORSE"
        ratio = self.ratio
        return "worse?" if ratio is not None and ratio > self.limit else ""


@dataclass(frozen=True)
class Comparison:
    """Every figure both sides printed, and those only one did."""

    rows: list[Row]
    only_base: list[str] = field(default_factory=list)
    only_tree: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> list[Row]:
        """The rows worse beyond their spread."""
        return [r for r in self.rows if r.flagged]


def compare(base: Mapping[str, Sequence[BenchLine]], tree: Mapping[str, Sequence[BenchLine]],
            limit: float = LIMIT) -> Comparison:
    """Compare the rounds of BASE and TREE (figure name -> that figure in each round).

    A figure missing from some rounds of a side (a script that failed once)
    is compared on the rounds it has.
    """
    rows = [Row(name, tree[name][-1].unit, tuple(x.value for x in base[name]),
                tuple(x.value for x in tree[name]), limit)
            for name in tree if name in base and base[name] and tree[name]]
    return Comparison(rows, sorted(set(base) - set(tree)), sorted(set(tree) - set(base)))


def _spread(values: Sequence[float]) -> str:
    return f"{statistics.median(values):g} ({min(values):g}–{max(values):g})"


def render(comparison: Comparison) -> str:
    """The summary table: each figure's medians, ranges, ratio and verdict."""
    head = ("figure", "unit", "base median (range)", "tree median (range)", "ratio", "")
    table = [head] + [(r.name, r.unit, _spread(r.base), _spread(r.tree),
                       "—" if r.ratio is None else f"{r.ratio:.2f}", r.verdict)
                      for r in comparison.rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
           for row in table]
    for label, names in (("only in base", comparison.only_base),
                         ("only in tree", comparison.only_tree)):
        if names:
            out.append(f"{label}: {', '.join(names)}")
    flagged = comparison.flagged
    limit = comparison.rows[0].limit if comparison.rows else LIMIT
    out.append(f"{len(flagged)} of {len(comparison.rows)} figures worse beyond their spread "
               f"(tree's best > {limit:g} × base's worst)"
               + (": " + ", ".join(r.name for r in flagged) if flagged else ""))
    return "\n".join(out)


# -- Running both sides ---------------------------------------------------------------

def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def _describe(root: Path) -> str:
    """The commit ROOT has checked out, and whether it has changes on top."""
    dirty = _git("status", "--porcelain", "--untracked-files=no", cwd=root)
    return _git("log", "-1", "--format=%h %s", cwd=root)[:72] + (" + changes" if dirty else "")


def _check_own_code(root: Path) -> str:
    """Where ROOT's benchmarks take tandem from; raise if it is not ROOT itself."""
    env = dict(os.environ, PYTHONPATH=str(root / "python"))
    found = [subprocess.run([sys.executable, "-c", "import tandem; print(tandem.__file__)"],
                            env=env, check=True, capture_output=True, text=True).stdout.strip()]
    if shutil.which("emacs"):
        found.append(subprocess.run(
            ["emacs", "--batch", "--no-init-file", "-L", str(root / "elisp"), "--eval",
             "(progn (require 'tandem-client) (princ (symbol-file 'tandem-request 'defun)))"],
            check=True, capture_output=True, text=True).stdout.strip())
    for path in found:
        if not Path(path).resolve().is_relative_to(root.resolve()):
            raise SystemExit(f"{root}: its benchmarks would run {path}, not its own code")
    return ", ".join(found)


def _scripts(root: Path) -> set[str]:
    return {p.stem for p in (root / "bench").glob("bench_*.*") if p.suffix in (".py", ".el")}


def run_side(root: Path, stems: Sequence[str]) -> tuple[dict[str, BenchLine], bool]:
    """Run ROOT's ``bench/run.py`` on STEMS (all when empty); its figures and success."""
    proc = subprocess.run([sys.executable, str(root / "bench" / "run.py"), *stems], cwd=root,
                          capture_output=True, text=True)
    if proc.returncode:
        print(f"{root}: {proc.stderr[-1500:]}", file=sys.stderr)
    return parse_lines(proc.stdout.splitlines()), proc.returncode == 0


def _base_worktree(ref: str) -> Path:
    commit = _git("rev-parse", "--verify", f"{ref}^{{commit}}")
    path = ROOT / ".cache" / f"bench-base-{commit[:10]}-{os.getpid()}"
    _git("worktree", "add", "--detach", "--quiet", str(path), commit)
    # The interpreter and dependencies only; tandem itself comes from PYTHONPATH.
    (path / ".venv").symlink_to(ROOT / ".venv")
    return path


def _remove_worktree(path: Path) -> None:
    subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT,
                   capture_output=True)
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the rounds, print each side's figures as they come and the table at the end."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="main", help="commit, branch or tag to compare with")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each side (>= 2)")
    parser.add_argument("--only", default="", help="scripts, comma-separated: transport,view")
    parser.add_argument("--figures", default="", help="keep only these figures, comma-separated")
    parser.add_argument("--limit", type=float, default=LIMIT, help="ratio that is flagged")
    args = parser.parse_args(argv)
    if args.rounds < 2:
        parser.error("--rounds must be at least 2: the spread needs two rounds")
    stems = ["bench_" + s.strip().removeprefix("bench_") for s in args.only.split(",") if s.strip()]
    wanted = {s.strip() for s in args.figures.split(",") if s.strip()}
    base_root = _base_worktree(args.base)
    try:
        unknown = [s for s in stems if s not in _scripts(ROOT) | _scripts(base_root)]
        if unknown:
            parser.error(f"no benchmark script {', '.join(unknown)} on either side")
        sides = {"base": base_root, "tree": ROOT}
        for side, root in sides.items():
            print(f"{side}: {_describe(root)}\n      runs {_check_own_code(root)}", flush=True)
        # A script that changed measures something else: say so beside the ratios.
        changed = _git("diff", "--name-only", _git("rev-parse", "HEAD", cwd=base_root), "--",
                       "bench/").split()
        changed = [c for c in changed if not stems or Path(c).stem in stems
                   or not Path(c).name.startswith("bench_")]
        if changed:
            print(f"bench scripts that differ (their figures may measure other things): "
                  f"{', '.join(Path(c).name for c in changed)}", flush=True)
        rounds: dict[str, dict[str, list[BenchLine]]] = {"base": {}, "tree": {}}
        tree_ok = True
        for n in range(args.rounds):
            for side in (("base", "tree") if n % 2 == 0 else ("tree", "base")):
                t0, load = time.monotonic(), _load()
                figures, ok = run_side(sides[side], stems)
                tree_ok = tree_ok and (ok or side == "base")
                for name, line in figures.items():
                    if not wanted or name in wanted:
                        rounds[side].setdefault(name, []).append(line)
                print(f"round {n + 1} {side}: {len(figures)} figures in "
                      f"{time.monotonic() - t0:.0f} s ({load})", flush=True)
    finally:
        _remove_worktree(base_root)
    comparison = compare(rounds["base"], rounds["tree"], args.limit)
    print(render(comparison))
    if not tree_ok:
        print("the working tree's benchmarks failed (above)")
    # 2: the tree's benchmarks themselves failed; 1: a figure is flagged.
    return 2 if not tree_ok else 1 if comparison.flagged else 0


if __name__ == "__main__":
    sys.exit(main())
