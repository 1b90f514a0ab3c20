"""The soak's main loop: operations, faults, recoveries and invariant checks.

``python tests/soak/driver.py --seed S --ops N`` (or ``make soak``); `run`
is what the pytest version calls. Everything lives in a temporary folder:
HOME, TANDEM_HOME, the projects; the user's own state is never read.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = "soak"  # noqa: A001

from soak import faults, invariants, report  # noqa: E402
from soak.backend import Backend, CallError, Client, Dead  # noqa: E402
from soak.fake_model import server  # noqa: E402
from soak.model import Model, Project  # noqa: E402
from soak.ops import AGENT_PROVIDER, PROVIDER, Op, generate, run_op, wait_turn  # noqa: E402

PROJECTS = 3
VERBOSE = bool(os.environ.get("SOAK_VERBOSE"))


@dataclass
class World:
    """Everything one run holds: the backend, its connection, the model, the projects."""

    base: Path
    backend: Backend
    client: Client
    model: Model
    projects: list[Project]
    fake: Any
    stats: report.Stats
    reverting: tuple[Project, str] | None = None
    armed: str = ""
    """The fault spec the running backend was started with (empty: none armed)."""
    pending: list[tuple[Project, int, int]] = field(default_factory=list)
    """Turns sent since the last check of their request: (project, op, turn)."""
    index: int = -1
    """The operation being carried out."""
    recovered: bool = True
    """Whether the next turn's request is the first since a recovery (projection check)."""

    @property
    def agent(self) -> Project:
        """The project whose session talks to the ACP agent (the last one)."""
        return self.projects[-1]

    def take_events(self) -> None:
        """Fold the events received so far into the model."""
        self.model.take(self.client.events)

    def questions(self, sid: str, turn: int) -> list[str]:
        """Permission questions asked so far in TURN of SID (interaction ids)."""
        return [str(e.get("interaction_id")) for e in self.stats.interactions
                if e.get("session") == sid and e.get("turn") == turn]

    def sent(self, p: Project, op: int, turn: int) -> None:
        """Turn TURN of P's session was accepted for operation OP."""
        self.pending.append((p, op, turn))

    def reconnect(self) -> None:
        """A new connection to the running backend (the old one was dropped)."""
        self.client = self.backend.connect()
        self.client.events = _Watch(self.stats)

    def violation(self, what: str) -> None:
        """Record a violated invariant."""
        self.stats.violations.append(f"op {self.index}: {what}")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def make_projects(base: Path) -> list[Project]:
    """Real git projects with a committed file each: PROJECTS for the model, one for the agent."""
    out = []
    for i in range(PROJECTS + 1):
        root = base / "projects" / f"p{i}"
        root.mkdir(parents=True)
        _git(root, "init", "-q")
        (root / "README").write_text(f"project {i}\n")
        _git(root, "add", "README")
        _git(root, "-c", "user.name=soak", "-c", "user.email=soak@example.invalid",
             "commit", "-q", "-m", "start")
        out.append(Project(f"p{i}", root))
    return out


class _Watch(list[dict[str, Any]]):
    """The client's event list, also keeping interactions for the answerer."""

    def __init__(self, stats: report.Stats) -> None:
        super().__init__()
        self.stats = stats

    def extend(self, events: Any) -> None:  # type: ignore[override]
        """Keep EVENTS; note permission questions."""
        events = list(events)
        self.stats.interactions += [e for e in events if e.get("kind") == "interaction"]
        super().extend(events)


def _connect(w: World, faults_spec: str) -> None:
    w.client = w.backend.start(faults_spec)
    w.armed = faults_spec
    w.client.events = _Watch(w.stats)


def recover(w: World, why: str) -> None:
    """The backend died (or was killed): start it again, reopen every session, check."""
    t0 = time.monotonic()
    w.backend.kill()
    for line in w.backend.fired():
        w.stats.fired(line)
    w.stats.recoveries += 1
    if w.reverting is not None:  # docs/checkpoints.md, Limits: a revert cut before its entry
        w.reverting[0].excused.add(w.reverting[1])
        w.reverting = None
    _connect(w, "")
    for p in w.projects:
        w.client.call("sessions/resume", {"query": p.sid, "cwd": str(p.root), "relocate": True})
        for turn in invariants.open_turns(w.backend.home, p.sid):
            # Asking for an open turn's status closes it (the repair).
            w.client.call("turns/status", {"session": p.sid, "turn": turn})
    w.take_events()
    w.stats.recovery_seconds += time.monotonic() - t0
    check(w)
    w.recovered = True
    w.pending.clear()


def check(w: World) -> None:
    """Every invariant, once."""
    t0 = time.monotonic()
    home = w.backend.home
    found: list[str] = []

    def part(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        t = time.monotonic()
        out = fn(*args, **kwargs)
        w.stats.timed(w.stats.check_parts, name, time.monotonic() - t)
        return out

    part("settle", settle, w)
    found += part("journals", invariants.journals, home, w.model, w.projects)
    found += part("listing", invariants.listing, w.client, w.projects)
    found += part("temp files", invariants.temp_files, w.projects)
    found += part("modes", invariants.private_modes, home)
    for p in w.projects:
        for v in part("files", invariants.files_match_journal, w.client, p, armed=bool(w.armed)):
            if invariants.STORE_MISS in v:
                w.stats.store_misses += 1
            else:
                found.append(v)
    w.stats.checks += 1
    w.stats.check_seconds += time.monotonic() - t0
    for v in found:
        w.violation(v)


def settle(w: World) -> None:
    """Wait for the turns still running (a queued message sent on) to end before a check.

    A check looks at a quiet system: a turn that never ends is the `wait_turn`
    timeout's violation, not a false "started and never ended".
    """
    for p in w.projects:
        for turn in invariants.open_turns(w.backend.home, p.sid):
            wait_turn(w, p, turn, random.Random(turn))


def check_projection(w: World) -> None:
    """The first request of each turn sent since the last check matches the journal."""
    # A request the backend was killed while sending has no body that parses.
    requests = [r.body for r in w.fake.api_requests("/v1/chat/completions")
                if isinstance(r.body, dict)]
    for p, op, turn in w.pending:
        mark = f"[soak {op} "
        first = next((b for b in requests if (b.get("messages") or [{}])[-1].get("role") == "user"
                      and mark in str(b["messages"][-1].get("content"))), None)
        if first is not None:
            w.stats.projections += 1
            for v in invariants.projection(w.backend.home, p, turn, first):
                w.violation(f"after op {op}: {v}")
    w.pending.clear()


def run(seed: int, ops: list[Op], base: Path, seconds: float | None = None,
        check_every: int = 100) -> report.Stats:
    """Run OPS (or as many as SECONDS allow) in BASE; the figures and violations."""
    stats = report.Stats(seed=seed)
    home = base / "tandem"
    home.mkdir(parents=True)
    projects = make_projects(base)
    fake = server()
    fake.start()
    env = {"HOME": str(base / "home"), "XDG_CONFIG_HOME": str(base / "config"),
           "XDG_STATE_HOME": str(base / "state"), "XDG_DATA_HOME": str(base / "data"),
           "XDG_CACHE_HOME": str(base / "cache"),
           "OPENAI_BASE_URL": fake.base_url + "/v1", "OPENAI_API_KEY": "sk-soak",
           "GIT_CONFIG_GLOBAL": os.devnull}
    for d in ("home", "config", "state", "data", "cache"):
        (base / d).mkdir()
    agent = Path(__file__).resolve().parent / "fake_acp.py"
    (base / "config" / "tandem").mkdir()
    (base / "config" / "tandem" / "settings.json").write_text(json.dumps({"acp_agents": {
        "soak": {"command": [sys.executable, str(agent), str(base / "agent-log.jsonl")]}}}))
    backend = Backend(home, env)
    w = World(base, backend, backend.start(), Model(), projects, fake, stats)
    w.client.events = _Watch(stats)
    started = time.monotonic()
    try:
        for p in projects:
            p.sid = w.client.call("sessions/new", {"cwd": str(p.root)})["id"]
            w.client.call("turns/set-provider", {"session": p.sid, "provider": (
                AGENT_PROVIDER if p is w.agent else PROVIDER)})
        w.take_events()
        for i, op in enumerate(ops):
            if seconds is not None and time.monotonic() - started > seconds:
                break
            step(w, i, op)
            if (i + 1) % check_every == 0:
                guarded(w, check, "a periodic check")
        if not w.backend.alive():
            recover(w, "dead at the end")
        check_projection(w)
        check(w)
    finally:
        stats.seconds = time.monotonic() - started
        backend.stop()
        for line in backend.fired():
            stats.fired(line)
        fake.stop()
    return stats


def guarded(w: World, fn: Any, what: str) -> None:
    """FN(W), recovering when the backend dies in it (an armed point fired there)."""
    try:
        fn(w)
    except (Dead, TimeoutError, ConnectionError):
        if not w.backend.wait_dead(2.0):
            w.violation(f"{what}: the connection failed with the backend alive")
        recover(w, f"died in {what}")


def step(w: World, i: int, op: Op) -> None:
    """Carry out the Ith operation OP, recovering when the backend dies in it."""
    kind = op[0]
    w.index = i
    w.stats.ops += 1
    w.stats.kinds[kind] = w.stats.kinds.get(kind, 0) + 1
    n_violations = len(w.stats.violations)
    started = time.monotonic()
    try:
        if kind == "kill":
            w.stats.fired("between-ops kill")
            recover(w, "kill -9 between operations")
        elif kind == "arm":
            t0 = time.monotonic()
            spec = faults.choose(op[2])
            w.backend.kill()
            w.stats.armed += 1
            w.stats.recoveries += 1
            w.stats.fired("between-ops kill")
            _connect(w, spec)
            for p in w.projects:
                w.client.call("sessions/resume", {"query": p.sid, "cwd": str(p.root),
                                                  "relocate": True})
            w.take_events()
            w.stats.recovery_seconds += time.monotonic() - t0
        else:
            t0 = time.monotonic()
            outcome = run_op(w, i, op)
            if VERBOSE:
                print(f"op {i} {op}: {outcome} {time.monotonic() - t0:.2f}s", file=sys.stderr)
            w.stats.outcomes[outcome] = w.stats.outcomes.get(outcome, 0) + 1
            if w.recovered and w.pending:
                check_projection(w)
                w.recovered = False
    except (Dead, TimeoutError, ConnectionError) as e:
        w.take_events()
        if not w.backend.wait_dead(2.0):
            w.violation(f"{kind}: the connection failed ({e}) with the backend alive")
        recover(w, f"died in op {i} {kind}")
    except CallError as e:  # from the recovery's own calls
        w.violation(f"{kind}: recovery failed: {e.code} {e.message}")
    except AssertionError as e:
        w.violation(f"{kind}: {e}")
    w.stats.timed(w.stats.op_seconds, kind, time.monotonic() - started)
    if len(w.stats.violations) > n_violations:
        w.stats.first_violation_op = (w.stats.first_violation_op
                                      if w.stats.first_violation_op is not None else i)


def main(argv: list[str] | None = None) -> int:
    """``--seed S --ops N [--seconds T] [--no-shrink] [--keep]``: run, report, 1 on violations."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ops", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    ops = generate(args.seed, args.ops, PROJECTS)
    base = Path(tempfile.mkdtemp(prefix=f"tandem-soak-{args.seed}-"))
    stats = run(args.seed, ops, base, args.seconds)
    if stats.violations and not args.no_shrink:
        stats.shrunk = report.shrink(args.seed, ops[: (stats.first_violation_op or 0) + 1],
                                     lambda sub: bool(run(args.seed, sub, Path(
                                         tempfile.mkdtemp(prefix="tandem-shrink-"))).violations))
    print(stats.text())
    if not args.keep and not stats.violations:
        import shutil
        shutil.rmtree(base, ignore_errors=True)
    else:
        print(f"kept: {base}")
    return 1 if stats.violations else 0


if __name__ == "__main__":
    sys.exit(main())
