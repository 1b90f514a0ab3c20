"""Rewind: attempts and discussion turns whose turns a rewind hid leave the live state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ws_helpers import act, create, get, make_app, marker_model, new_session

pytestmark = pytest.mark.anyio


async def test_rewound_attempts_disappear_and_state_rederives(project: Path, tmp_path: Path,
                                                              model: Any) -> None:
    fake = model(marker_model)
    app = make_app(tmp_path / "home", fake)
    try:
        sid = await new_session(app, project)
        await create(app, project, "Make it loud")
        await act(app, project, "D1", "discuss", "DISCUSS-Q1", session=sid)        # turn 1
        await act(app, project, "D1", "implement-this")                            # turn 2
        await act(app, project, "D1", "request-changes", "FEEDBACK-1")             # turn 3
        await act(app, project, "D1", "discuss-result", "DR-Q", attempt=2)         # turn 4
        before = await get(app, project, "D1")
        assert before["state"] == "discussed" and len(before["attempts"]) == 2

        # The rewind transaction writes a rewind entry; here we write it the same way.
        journal = app.sessions.journal(sid)
        journal.append({"type": "rewind", "before_turn": 3})
        after = await get(app, project, "D1")
        assert [a["seq"] for a in after["attempts"]] == [1]
        assert after["discarded"] == {"attempts": [2], "discussion": [2]}
        assert after["state"] == "implemented"
        assert after["request"] == "Make it loud"  # the user's request survives
        assert "request-changes" in after["actions"]
        # The next attempt gets a fresh number; the discarded one is not reused.
        reply, ended = await act(app, project, "D1", "request-changes", "FEEDBACK-1 again")
        assert reply["attempt"] == 3 and reply["turn"] == 5 and ended.outcome == "succeeded"
        assert [a["seq"] for a in (await get(app, project, "D1"))["attempts"]] == [1, 3]

        journal.append({"type": "rewind", "before_turn": 1})
        gone = await get(app, project, "D1")
        assert gone["attempts"] == [] and gone["discussion"] == []
        assert gone["state"] == "ready" and gone["actions"] == ["discuss", "implement"]
    finally:
        await app.turns.aclose()
