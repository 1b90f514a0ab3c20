"""Rewind across a crash: a real process killed between the steps, then started again.

The crasher (`_CRASHER`) runs a real rewind in its own process and dies with
``os._exit`` at one point of it: mid-restore (right after a file's temporary
copy is written and fsynced, before it is renamed over the file), after the
files are restored but before the ``rewind`` entry is written, or right after
the entry is written. Then a new backend state opens the session (or a real
``tandem serve`` starts) and the test checks the files, the journal, the next
plan and the workspace for left temporary files.

The rule (docs/checkpoints.md, "Rewind across a crash"): the ``rewind`` entry
is the commit point. No entry: the files go back to the backup checkpoint
(rolled back). Entry written: the rewind stands; only the intent and any
temporary files are cleaned up.
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
from tandem.protocol import sexp
from tandem.rewind.recovery import recover_all
from tandem.store.journal import Journal

from .helpers import journal_path, tree, use
from .test_rewind import SCRIPT, _three_turns

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from server.epc_peer import Peer, start_backend  # noqa: E402

pytestmark = pytest.mark.anyio

_CRASHER = r"""
import asyncio, os, sys
from pathlib import Path
from tandem.app import App
from tandem.protocol import sexp
from tandem.store.journal import Journal

home, sid, turn, stage = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
real_append, real_replace = Journal.append, os.replace

def append(self, entry):
    # Between the two halves of the transaction: files restored, no entry yet.
    kind = entry.get("type") if isinstance(entry, dict) else getattr(entry, "type", None)
    if stage == "before-entry" and kind == "rewind":
        os._exit(17)
    written = real_append(self, entry)
    if stage == "after-entry" and kind == "rewind":
        os._exit(17)  # the entry is in the file; the intent is still there
    return written

def replace(src, dst):
    # Mid-restore: a temporary copy is written and fsynced, the rename never happens.
    if stage == "mid-restore" and ".tandem-" in os.path.basename(os.fspath(src)):
        os._exit(17)
    return real_replace(src, dst)

Journal.append = append
os.replace = replace

async def main():
    app = App(home=Path(home))
    plan = await app.rewinds.plan(sid, turn)
    await app.rewinds.rewind(sid, turn, plan.digest)

asyncio.run(main())
sys.exit(3)  # the rewind finished: the fault never fired
"""


def _crash(home: Path, sid: str, turn: int, stage: str) -> None:
    proc = subprocess.run([sys.executable, "-c", _CRASHER, str(home), sid, str(turn), stage],
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 17, proc.stderr


def _temp_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".tandem-" in p.name)


def _of_type(journal: Path, kind: str) -> list[dict[str, Any]]:
    """The entries of KIND in the journal file (read without opening the session)."""
    lines = journal.read_text().splitlines()[1:]
    return [e for e in map(json.loads, lines) if e["type"] == kind]


async def _session(app: App, project: Path, monkeypatch: pytest.MonkeyPatch
                   ) -> tuple[str, Path, dict[str, tuple[str, int]]]:
    """Three turns, then the backend state closed (journals and locks released)."""
    with FakeOpenAI(SCRIPT) as fake:
        use(fake, monkeypatch)
        try:
            sid, after_first = await _three_turns(app, project)
            journal = journal_path(app, sid)
        finally:
            await app.turns.aclose()
    app.sessions.manager.close()
    return sid, journal, after_first


async def _check_rolled_back(app: App, project: Path, sid: str, journal: Path,
                             before: dict[str, tuple[str, int]], planned: Any) -> None:
    """Files as before the rewind, no rewind entry, a sane plan, no temp files."""
    again = await app.rewinds.plan(sid, planned.before_turn)  # opens the session: recovers
    assert tree(project) == before
    assert _temp_files(project) == []
    assert _of_type(journal, "rewind") == []
    [recovered] = _of_type(journal, "rewind_recovery")
    assert recovered["outcome"] == "rolled-back" and recovered["before_turn"] == planned.before_turn
    assert not list(journal.with_suffix("").glob("rewind-intent*"))
    assert again.changed_externally == []
    assert (again.to_restore, again.to_delete) == (planned.to_restore, planned.to_delete)
    # And the rewind can now be done for real.
    await app.rewinds.rewind(sid, planned.before_turn, again.digest)
    assert len(_of_type(journal, "rewind")) == 1


async def test_crash_between_restore_and_entry_is_rolled_back_on_open(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sid, journal, _ = await _session(app, project, monkeypatch)
    before = tree(project)
    later = App(home=app.home, events=RecordingSink())
    planned = await later.rewinds.plan(sid, 2)
    later.sessions.manager.close()
    _crash(app.home, sid, 2, "before-entry")
    assert not (project / "d.txt").exists()  # the files were restored when it died
    assert _of_type(journal, "rewind") == []
    again = App(home=app.home, events=RecordingSink())
    try:
        await _check_rolled_back(again, project, sid, journal, before, planned)
    finally:
        await again.turns.aclose()


async def test_kill_mid_restore_leaves_no_temp_files(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sid, journal, _ = await _session(app, project, monkeypatch)
    before = tree(project)
    later = App(home=app.home, events=RecordingSink())
    planned = await later.rewinds.plan(sid, 1)
    later.sessions.manager.close()
    _crash(app.home, sid, 1, "mid-restore")
    assert _temp_files(project) != []  # the kill left tandem's temporary copy behind
    # A user's file that merely looks like one of ours is never removed.
    (project / ".keep.txt.tandem-0123abcd").write_text("the user's own\n")
    before[".keep.txt.tandem-0123abcd"] = tree(project)[".keep.txt.tandem-0123abcd"]
    again = App(home=app.home, events=RecordingSink())
    try:
        assert tree(project) != before
        # Opening the session (app.sessions.journal) is where recovery runs.
        again.sessions.journal(sid)
        assert tree(project) == before
        (project / ".keep.txt.tandem-0123abcd").unlink()
        del before[".keep.txt.tandem-0123abcd"]
        await _check_rolled_back(again, project, sid, journal, before, planned)
    finally:
        await again.turns.aclose()


async def test_crash_after_the_entry_keeps_the_rewind(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sid, journal, after_first = await _session(app, project, monkeypatch)
    _crash(app.home, sid, 2, "after-entry")
    intent = journal.with_suffix("") / "rewind-intent.json"
    assert intent.exists()  # the crash came before the intent was removed
    again = App(home=app.home, events=RecordingSink())
    try:
        plan = await again.rewinds.plan(sid, 1)
        assert plan.changed_externally == []
        assert not intent.exists()
        assert tree(project) == after_first
        assert len(_of_type(journal, "rewind")) == 1
        [recovered] = _of_type(journal, "rewind_recovery")
        assert recovered["outcome"] == "committed"
        assert _temp_files(project) == []
    finally:
        await again.turns.aclose()


async def test_backend_start_recovers_before_it_serves(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sid, journal, _ = await _session(app, project, monkeypatch)
    before = tree(project)
    _crash(app.home, sid, 1, "mid-restore")
    assert _temp_files(project) != [] and tree(project) != before
    proc = start_backend(app.home, "t")
    try:
        # The port line and `hello` may come first (hello is answered before the
        # services are built); every other request is answered only after recovery:
        # once the first one returns, the files are back already.
        peer = Peer(proc.port)  # type: ignore[attr-defined]
        peer.call("hello", {"token": "t"})
        assert peer.recv()[0] == "return"
        uid = peer.call("sessions/list", {"all": True})
        while (msg := peer.recv())[:2] != [sexp.Symbol("return"), uid]:
            assert msg[0] != "return-error" and msg[0] != "epc-error", msg  # events may come first
        peer.close()
        assert tree(project) == before
        assert _temp_files(project) == []
        [recovered] = _of_type(journal, "rewind_recovery")
        assert recovered["outcome"] == "rolled-back"
        assert recovered["temp_removed"] != []
        log = (app.home / "logs" / "backend.log").read_text()
        assert "rewind" in log and "rolled back" in log and sid in log
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert json.loads(journal.read_text().splitlines()[-1])["type"] == "rewind_recovery"


async def test_a_held_journal_is_left_to_its_process_and_a_garbled_intent_set_aside(
        app: App, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sid, journal, _ = await _session(app, project, monkeypatch)
    intent = journal.with_suffix("") / "rewind-intent.json"
    intent.parent.mkdir(exist_ok=True)
    intent.write_text('{"tandem_rewind_intent": 1, "session": ')  # cut short
    files = tree(project)
    # A live process holds the journal: its rewind may be in flight, so hands off.
    holder = Journal.open(journal, writable=True)
    try:
        assert recover_all(App(home=app.home, events=RecordingSink())) == []
        assert intent.exists()
    finally:
        holder.close()
    again = App(home=app.home, events=RecordingSink())
    try:
        plan = await again.rewinds.plan(sid, 2)  # opening the session settles it
        assert plan.changed_externally == [] and tree(project) == files
        assert not intent.exists()
        [aside] = intent.parent.glob("rewind-intent.json.unreadable-*")
        assert aside.read_text().startswith('{"tandem_rewind_intent"')
        notices = again.sessions.journal(sid).notices
        assert any("cannot be read" in n and str(aside) in n for n in notices)
        assert _of_type(journal, "rewind_recovery") == []
    finally:
        await again.turns.aclose()
