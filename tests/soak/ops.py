"""The operations of a soak: generated from a seed, carried out over the wire.

An operation is a plain tuple ``(kind, project, r)``: R is a random number
the operation uses for its own choices at run time (which turn, which file,
which answer), so any sub-list of a run is itself a run (the shrinker's).
Faults are operations too: ``kill`` (``kill -9`` between operations) and
``arm`` (restart with one fault point armed, so it fires inside a later one).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .backend import CallError, Client
from .fake_model import tag

if TYPE_CHECKING:
    from .driver import World
    from .model import Project

Op = tuple[str, int, int]

WEIGHTS = {
    "send": 60, "ask": 16, "queue": 10, "cancel": 10, "drop": 4, "rewind": 16, "undo": 10,
    "compact": 4, "revert": 10, "directive": 6, "relocate": 2, "reopen": 6, "outside": 16,
    "kill": 1, "arm": 3, "agent": 3,
}
"""How often each kind comes (relative).

``agent`` is rarer than its share of the features: after most backend
restarts its turn starts a new ACP agent, and that agent and the backend
each import the ACP SDK (about 1 s of CPU apiece here), so at 6 the agent
turns took a quarter of a run's time for 3 % of its operations."""

EXPECTED = {"busy", "stale", "not-found", "nothing-to-compact", "io", "later-turns",
            "compaction", "conflict", "no-checkpoint", "restore-failed", "provider",
            "read-only", "move-failed", "checkpoint-failed", "cancelled", "closed"}
"""Error codes an operation may meet in a soak (a refusal, a fault's io error)."""

PROVIDER = "openai:soak-model"
AGENT_PROVIDER = "acp:soak"
"""The ACP agent (tests/soak/fake_acp.py) of the agent project, a child of the backend."""
VERBOSE = bool(os.environ.get("SOAK_VERBOSE"))
TOOL_FILES = 6
OUTSIDE_FILES = 4


def generate(seed: int, count: int, projects: int) -> list[Op]:
    """COUNT operations for SEED over PROJECTS projects."""
    rng = random.Random(seed)
    kinds, weights = list(WEIGHTS), list(WEIGHTS.values())
    # One operation's draws at a time: a run of N is a prefix of a run of 2N.
    return [(rng.choices(kinds, weights)[0], rng.randrange(projects), rng.randrange(1 << 30))
            for _ in range(count)]


def _turns(c: Client, p: Project, last: int = 8) -> list[dict[str, Any]]:
    """The newest LAST turns of P's session that no rewind hid (a long history's others
    would cost every operation a reply that grows with the run)."""
    rows: list[dict[str, Any]] = c.call("sessions/turns", {
        "session": p.sid, "last": last, "hide_rewound": True})["turns"] or []
    return rows


def wait_turn(w: World, p: Project, turn: int, r: random.Random, ask: bool = False) -> None:
    """Wait for TURN to end, answering permission questions (R chooses)."""
    deadline = time.monotonic() + 60
    answered: set[str] = set()
    timeout = 0.05 if ask else 0.5  # a question comes soon: answer it without a long wait
    while time.monotonic() < deadline:
        st = w.client.call("turns/wait", {"session": p.sid, "turn": turn, "timeout": timeout})
        w.take_events()
        if st["state"] == "ended":
            return
        for q in w.questions(p.sid, turn):
            if q not in answered:
                answered.add(q)
                answer = r.choice(["allow_once", "allow_once", "allow_session", "reject"])
                w.client.call("turns/answer", {"session": p.sid, "interaction_id": q,
                                               "answer": answer})
    raise AssertionError(f"turn {turn} of {p.sid} did not end within 60 s")


def _send(w: World, p: Project, op: int, r: random.Random, action: str | None = None,
          mode: str = "auto-edit", provider: str = PROVIDER) -> int:
    if action is None:
        action = r.choices(["write", "text", "fail", "broken"], [6, 3, 1, 1])[0]
    args = [f"t{r.randrange(TOOL_FILES)}.txt", f"v{op}"] if action == "write" else []
    text = f"step {op} " + tag(op, action, *args)
    sent = w.client.call("turns/send", {"session": p.sid, "text": text, "provider": provider,
                                        "permission_mode": mode})
    if provider == PROVIDER:  # the projection check reads the fake model's requests
        w.sent(p, op, int(sent["turn"]))
    return int(sent["turn"])


def op_send(w: World, p: Project, op: int, r: random.Random) -> None:
    """A chat turn (a tool write, a text, a failure, a broken stream), to its end."""
    wait_turn(w, p, _send(w, p, op, r), r)


def op_ask(w: World, p: Project, op: int, r: random.Random) -> None:
    """A write in ask mode: the permission question is answered (allow or reject)."""
    wait_turn(w, p, _send(w, p, op, r, "write", "ask"), r, ask=True)


def op_queue(w: World, p: Project, op: int, r: random.Random) -> None:
    """A slow turn and a message queued behind it; both run to their ends."""
    turn = _send(w, p, op, r, "slow")
    text = f"queued {op} " + tag(op, "write", f"t{r.randrange(TOOL_FILES)}.txt", f"q{op}")
    w.client.call("turns/queue", {"session": p.sid, "text": text})
    wait_turn(w, p, turn, r)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the queued message becomes the next turn
        q = w.client.call("turns/queue-list", {"session": p.sid})
        if q.get("running"):  # a queued write asks (the session's mode): answer at once
            wait_turn(w, p, int(q["running"]), r, ask=True)
        elif not q.get("items"):
            return
        elif q.get("held"):  # the turn before did not end well: send the queue on
            sent = w.client.call("turns/queue-send", {"session": p.sid})
            if not sent.get("sent_turn"):
                return
            wait_turn(w, p, int(sent["sent_turn"]), r, ask=True)
        else:
            time.sleep(0.02)
    raise AssertionError(f"the queue of {p.sid} did not drain within 60 s")


def op_cancel(w: World, p: Project, op: int, r: random.Random) -> None:
    """A slow turn cancelled after a moment."""
    turn = _send(w, p, op, r, "slow")
    time.sleep(r.random() * 0.2)
    w.client.call("turns/cancel", {"session": p.sid})
    wait_turn(w, p, turn, r)


def op_drop(w: World, p: Project, op: int, r: random.Random) -> None:
    """A slow turn whose connection is closed mid-turn; a new connection waits for it."""
    turn = _send(w, p, op, r, "slow")
    time.sleep(r.random() * 0.2)
    w.client.close()
    w.reconnect()
    wait_turn(w, p, turn, r)


def op_rewind(w: World, p: Project, op: int, r: random.Random) -> None:
    """Rewind before a visible turn, as planned."""
    rows = [t for t in _turns(w.client, p) if t.get("outcome")]
    if not rows:
        return
    turn = r.choice(rows[-4:])["turn"]
    plan = w.client.call("sessions/rewind-plan", {"session": p.sid, "turn": turn})
    w.client.call("sessions/rewind", {"session": p.sid, "turn": turn, "digest": plan["digest"]})


def op_undo(w: World, p: Project, op: int, r: random.Random) -> None:
    """Undo the latest rewind (files only when later turns ran)."""
    files_only = r.random() < 0.3
    plan = w.client.call("sessions/rewind-undo-plan", {"session": p.sid, "files_only": files_only})
    if plan.get("refusal"):
        return
    w.client.call("sessions/rewind-undo", {"session": p.sid, "digest": plan["digest"],
                                           "files_only": files_only})


def op_compact(w: World, p: Project, op: int, r: random.Random) -> None:
    """Compact the session's older turns."""
    w.client.call("sessions/compact", {"session": p.sid}, timeout=60)


def op_revert(w: World, p: Project, op: int, r: random.Random) -> None:
    """Revert one file of a recent turn that changed files."""
    rows = [t for t in _turns(w.client, p) if t.get("files")]
    if not rows:
        return
    row = r.choice(rows[-3:])
    path = r.choice(row["files"])
    w.reverting = (p, path)
    w.client.call("review/revert", {"session": p.sid, "turn": row["turn"], "path": path})
    w.reverting = None


def op_directive(w: World, p: Project, op: int, r: random.Random) -> None:
    """A directive on an outside file, then a discussion turn on it."""
    path = f"o{r.randrange(OUTSIDE_FILES)}.txt"
    full = p.root / path
    if not full.exists():
        full.write_text(f"line one\nline two of {op}\n")
    d = w.client.call("directives/create", {
        "root": str(p.root), "path": path, "start_line": 1, "end_line": 1,
        "text": full.read_text().split("\n", 1)[0], "request": f"explain {op}"})
    did = d.get("id") or d.get("directive", {}).get("id")
    acted = w.client.call("directives/act", {"root": str(p.root), "id": did, "action": "discuss",
                                             "provider": PROVIDER, "session": p.sid})
    turn = acted.get("turn")
    if isinstance(turn, int):
        wait_turn(w, p, turn, r)


def op_relocate(w: World, p: Project, op: int, r: random.Random) -> None:
    """Move the project's folder, then resume its session from the new place."""
    w.client.call("sessions/close", {"session": p.sid})
    p.moves += 1
    new = p.root.parent / f"{p.name}-m{p.moves}"
    shutil.move(p.root, new)
    p.root = new
    w.client.call("sessions/resume", {"query": p.sid, "cwd": str(p.root), "relocate": True})


def op_reopen(w: World, p: Project, op: int, r: random.Random) -> None:
    """Close the session and resume it."""
    w.client.call("sessions/close", {"session": p.sid})
    w.client.call("sessions/resume", {"query": p.sid, "cwd": str(p.root)})


def op_outside(w: World, p: Project, op: int, r: random.Random) -> None:
    """Someone else edits (or deletes) an outside file of the project."""
    path = p.root / f"o{r.randrange(OUTSIDE_FILES)}.txt"
    if r.random() < 0.2 and path.exists():
        path.unlink()
    else:
        path.write_text(f"outside {op}\n")


def _agent_pids(w: World) -> list[int]:
    """The running soak ACP agents of this run that are children of the running backend.

    Not any agent of the run: one a killed backend left behind is still
    exiting, and killing it instead would let the turn's own agent sleep on.
    """
    mark = str(w.base).encode()
    parent = w.backend.proc.pid if w.backend.proc is not None else -1
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"fake_acp.py" in cmd and mark in cmd and ppid == parent:
            pids.append(int(proc.name))
    return pids


def op_agent(w: World, p: Project, op: int, r: random.Random) -> None:
    """A turn of the ACP agent project: a write, a text, a rewind, an undo, or the agent
    killed with SIGKILL mid-turn (the turn must end ``failed``, the next one respawn it)."""
    p = w.agent
    choice = r.choices(["write", "text", "kill", "rewind", "undo"], [5, 2, 2, 2, 1])[0]
    if choice == "rewind":
        return op_rewind(w, p, op, r)
    if choice == "undo":
        return op_undo(w, p, op, r)
    turn = _send(w, p, op, r, "slow" if choice == "kill" else choice, provider=AGENT_PROVIDER)
    if choice == "kill":
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not _agent_pids(w):
            time.sleep(0.02)
        time.sleep(r.random() * 0.2)
        for pid in _agent_pids(w):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                w.stats.fired("agent child kill")
    wait_turn(w, p, turn, r)
    if choice == "kill":
        row = next((t for t in _turns(w.client, p, 1) if t["turn"] == turn), {})
        if row.get("outcome") not in ("failed", "succeeded"):
            raise AssertionError(f"a killed agent's turn {turn} ended {row.get('outcome')}")


RUN: dict[str, Callable[[World, Project, int, random.Random], None]] = {
    "send": op_send, "ask": op_ask, "queue": op_queue, "cancel": op_cancel, "drop": op_drop,
    "rewind": op_rewind, "undo": op_undo, "compact": op_compact, "revert": op_revert,
    "directive": op_directive, "relocate": op_relocate, "reopen": op_reopen,
    "outside": op_outside, "agent": op_agent,
}
"""The runner of each kind that is not a fault."""


def run_op(w: World, index: int, op: Op) -> str:
    """Carry out OP (the INDEXth); its outcome: ``ok`` or the error code met."""
    kind, proj, seed = op
    p = w.projects[proj]
    r = random.Random(seed)
    try:
        RUN[kind](w, p, index, r)
    except CallError as e:
        w.take_events()
        if VERBOSE:
            print(f"  {kind}: {e.code}: {e.message}", file=sys.stderr)
        refused = kind == "revert" and e.code == "invalid" and "already as it was" in e.message
        if e.code not in EXPECTED and not refused:
            w.violation(f"{kind} answered an unexpected error {e.code}: {e.message}")
        return e.code
    w.take_events()
    return "ok"
