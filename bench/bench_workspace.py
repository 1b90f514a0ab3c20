"""Workspace record benchmark: reading a large directive workspace.

A workspace log with 200 directives, each with 5 attempts (4 KB prompt,
2 KB diff, 1 KB answer) and 5 discussion turns: 2,200 events, written
through `WorkspaceLog` to a temp dir, with a real bound journal holding a
rewind (so the read path derives hidden turns from it).

Figures (medians):
* ``directive_get_200x10_cold`` -- the same ``directives/get`` in a fresh
  backend (nothing parsed or folded yet: read, validate, fold). Target 300 ms,
  and at most its anchor; the two are timed alternately (the
  previous run's parsed log is dropped untimed before each cold run), so a
  load change meets both.
* ``directive_get_200x10`` -- `WorkspaceService.get` of one directive in a
  warm backend: stat the log, parse lines appended since (none), derive
  rewinds, reuse the fold (what ``directives/get`` and every action do).
  Target 100 ms.
* ``directive_list_200x10`` -- the folded states of all directives (what
  ``directives/list`` and the overlay refresh do). Target 100 ms.
* ``directive_preview_200x10`` -- validate an action and build its prompt
  with fresh references (``directives/preview``). Target 100 ms.
Anchor ``naive_json_parse_log``: ``json.loads`` of every line of the same
log, no models, no fold.

Run: ``.venv/bin/python bench/bench_workspace.py``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from benchlib import alternating_ms, emit, median_ms  # noqa: E402
from tandem.app import App  # noqa: E402
from tandem.directives.flow import prepare  # noqa: E402

DIRECTIVES = 200
ATTEMPTS = 5
DISCUSSIONS = 5
TARGET_MS = 100.0


def main() -> None:
    """Build the workspace, then time the read paths beside the naive parse."""
    with tempfile.TemporaryDirectory() as tmp:
        home, root = Path(tmp) / "home", Path(tmp) / "project"
        root.mkdir()
        (root / "a.py").write_text("def f():\n    return 1\n" * 50)
        app = App(home=home)
        svc = app.workspaces
        ws = svc.open(str(root))
        session = app.sessions.manager.new(str(root)).journal
        turn = 0
        for d in range(1, DIRECTIVES + 1):
            svc.create(ws, "a.py", 1, 2, "def f():\n    return 1\n", f"Request {d}")
            svc.bind(ws, f"D{d}", session.id)
            items = []
            for k in range(1, ATTEMPTS + 1):
                turn += 1
                items.append(("attempt_recorded", {"directive": f"D{d}", "attempt": {
                    "seq": k, "action": "implement", "request": f"Request {d}",
                    "prompt": "p" * 4096, "answer": "a" * 1024, "diff": "+x\n" * 680,
                    "outcome": "succeeded", "session": session.id, "turn": turn}}))
            for k in range(1, DISCUSSIONS + 1):
                turn += 1
                items.append(("discussion_recorded", {"directive": f"D{d}", "discussion": {
                    "seq": k, "action": "discuss", "request": f"Request {d}", "prompt": "q" * 2048,
                    "answer": "b" * 1024, "outcome": "succeeded", "session": session.id,
                    "turn": turn}}))
            ws.log.append_many(items)
        for t in range(1, turn + 1):
            session.append({"type": "turn_start", "turn": t, "origin": "directive"})
        session.append({"type": "rewind", "before_turn": turn})

        def naive() -> object:
            return [json.loads(line) for line in ws.log.path.read_bytes().splitlines()]

        anchor = median_ms(naive)

        def cold() -> object:  # a fresh backend: nothing parsed or folded yet
            fresh = App(home=home).workspaces
            return fresh.get(fresh.open(str(root)), "D100")

        def forget() -> None:  # untimed: the process-wide parsed logs (journals: per App)
            from tandem.directives import log
            log._cache.clear()

        value, paired = alternating_ms(cold, naive, before=forget)
        emit("directive_get_200x10_cold", value, "naive_json_parse_log", paired, TARGET_MS * 3)
        emit("directive_get_200x10", median_ms(lambda: svc.get(ws, "D100")),
             "naive_json_parse_log", anchor, TARGET_MS)
        emit("directive_list_200x10", median_ms(lambda: svc.states(ws)),
             "naive_json_parse_log", anchor, TARGET_MS)
        emit("directive_preview_200x10",
             median_ms(lambda: prepare(ws, svc.get(ws, "D100"), "request-changes", "more", None,
                                       None)),
             "naive_json_parse_log", median_ms(naive), TARGET_MS)
        app.sessions.manager.close()


if __name__ == "__main__":
    main()
