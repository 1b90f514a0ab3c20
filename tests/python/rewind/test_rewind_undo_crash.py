"""Undoing a Rewind across a crash: a real process killed between files and entry.

The crasher runs a real undo in its own process and dies with ``os._exit``
after the files are restored and before the ``rewind_undo`` entry is
written, or right after it. A new backend state opening the session settles
it as for a rewind: the ``rewind_undo`` entry is the commit point.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI

from tandem.app import App
from tandem.events import RecordingSink
from tandem.sessions.projection import visible_turns

from .helpers import journal_path, tree, use
from .test_rewind import SCRIPT, _three_turns

pytestmark = pytest.mark.anyio

_CRASHER = r"""
import asyncio, os, sys
from pathlib import Path
from tandem.app import App
from tandem.store.journal import Journal

home, sid, stage = sys.argv[1], sys.argv[2], sys.argv[3]
real_append = Journal.append

def append(self, entry):
    kind = entry.get("type") if isinstance(entry, dict) else getattr(entry, "type", None)
    if stage == "before-entry" and kind == "rewind_undo":
        os._exit(17)  # files restored to the rewind's backup, no entry yet
    written = real_append(self, entry)
    if stage == "after-entry" and kind == "rewind_undo":
        os._exit(17)
    return written

Journal.append = append

async def main():
    app = App(home=Path(home))
    plan = await app.rewinds.undo.plan(sid)
    await app.rewinds.undo.undo(sid, plan.digest)

asyncio.run(main())
sys.exit(3)  # the undo finished: the fault never fired
"""


def _crash(home: Path, sid: str, stage: str) -> None:
    proc = subprocess.run([sys.executable, "-c", _CRASHER, str(home), sid, stage],
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 17, proc.stderr


def _entries(journal: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in journal.read_text().splitlines()[1:]]


async def _rewound(app: App, project: Path, monkeypatch: pytest.MonkeyPatch
                   ) -> tuple[str, Path, dict[str, tuple[str, int]]]:
    """Three turns, a rewind before turn 2, then the backend state closed."""
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid, _ = await _three_turns(app, project)
            before = tree(project)
            plan = await app.rewinds.plan(sid, 2)
            await app.rewinds.rewind(sid, 2, plan.digest)
            journal = journal_path(app, sid)
        finally:
            await app.turns.aclose()
    app.sessions.manager.close()
    return sid, journal, before


async def test_crash_between_restore_and_undo_entry_is_rolled_back(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sid, journal, before_rewind = await _rewound(app, project, monkeypatch)
    rewound = tree(project)
    _crash(app.home, sid, "before-entry")
    assert tree(project) == before_rewind  # the files were back when it died
    assert (journal.with_suffix("") / "rewind-intent.json").exists()
    again = App(home=app.home, events=RecordingSink())
    try:
        again.sessions.journal(sid)  # opening the session settles the intent
        assert tree(project) == rewound  # rolled back: the rewind stands
        written = _entries(journal)
        assert [e for e in written if e["type"] == "rewind_undo"] == []
        [recovered] = [e for e in written if e["type"] == "rewind_recovery"]
        assert recovered["outcome"] == "rolled-back" and recovered["undo"] is True
        assert "undo of the rewind before turn 2" in recovered["message"]
        assert visible_turns(written)[1] == {2, 3}
        assert not (journal.with_suffix("") / "rewind-intent.json").exists()
        # The undo can now be done for real, from a plan that says the same.
        plan = await again.rewinds.undo.plan(sid)
        assert plan.changed_externally == [] and [t.turn for t in plan.turns] == [2, 3]
        await again.rewinds.undo.undo(sid, plan.digest)
        assert tree(project) == before_rewind
        assert visible_turns(_entries(journal))[1] == set()
    finally:
        await again.turns.aclose()


async def test_crash_after_the_undo_entry_keeps_the_undo(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sid, journal, before_rewind = await _rewound(app, project, monkeypatch)
    _crash(app.home, sid, "after-entry")
    again = App(home=app.home, events=RecordingSink())
    try:
        again.sessions.journal(sid)
        assert tree(project) == before_rewind
        written = _entries(journal)
        [recovered] = [e for e in written if e["type"] == "rewind_recovery"]
        assert recovered["outcome"] == "committed"
        assert visible_turns(written)[1] == set()
    finally:
        await again.turns.aclose()
