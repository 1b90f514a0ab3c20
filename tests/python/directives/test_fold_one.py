"""A cold ``directives/get`` folds one directive alone: it must equal the full fold.

`WorkspaceService.get` folds only the asked directive's events when the
folded states of the whole log are not current (a fresh backend, a change
since); the result must be the state `states` gives, rewinds included.
"""

from __future__ import annotations

from pathlib import Path

from tandem.app import App
from tandem.directives import log


def _build(home: Path, root: Path) -> str:
    app = App(home=home)
    svc = app.workspaces
    ws = svc.open(str(root))
    session = app.sessions.manager.new(str(root)).journal
    turn = 0
    for d in range(1, 7):
        svc.create(ws, "a.py", 1, 2, "def f():\n    return 1\n", f"Request {d}")
        if d % 3:
            svc.bind(ws, f"D{d}", session.id)
        for k in range(1, d % 4 + 1):
            turn += 1
            ws.log.append("attempt_recorded", {"directive": f"D{d}", "attempt": {
                "seq": k, "action": "implement", "request": f"Request {d}", "prompt": "p",
                "answer": "a", "diff": "+x\n", "outcome": "succeeded" if k % 2 else "failed",
                "session": session.id, "turn": turn}})
            turn += 1
            ws.log.append("discussion_recorded", {"directive": f"D{d}", "discussion": {
                "seq": k, "action": "discuss", "request": f"Request {d}", "prompt": "q",
                "answer": "b", "outcome": "succeeded", "session": session.id, "turn": turn}})
        if d == 4:
            svc.edit(ws, "D4", "Request four, edited", None)
    svc.archive(ws, "D5", True)
    for t in range(1, turn + 1):
        session.append({"type": "turn_start", "turn": t, "origin": "directive"})
    session.append({"type": "rewind", "before_turn": turn - 5})
    app.sessions.manager.close()
    return ws.id


def test_get_of_one_directive_equals_the_full_fold(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "project"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    return 1\n")
    _build(home, root)
    log._cache.clear()  # a fresh backend: nothing parsed or folded
    cold = App(home=home).workspaces
    ws = cold.open(str(root))
    singles = {f"D{d}": cold.get(ws, f"D{d}").model_dump() for d in range(1, 7)}
    full = {d: s.model_dump() for d, s in cold.states(ws).items()}
    assert singles == full
    assert any(s["discarded"]["attempts"] for s in full.values())  # the rewind counted
    assert full["D4"]["request"] == "Request four, edited" and full["D5"]["archived"]
    # warm: the folded states are current, get reads them
    assert {d: cold.get(ws, d).model_dump() for d in full} == full
