"""Soak seed 11: a restore killed midway leaves no temporary file once its session is open.

Shrunk from the soak to four operations (ask, send, restart with
``restore.file=kill@1`` armed, review revert): the revert's restore wrote
``.t5.txt.tandem-<token>`` and the process died. Only a rewind left an
intent that opening the session settles; the checkpoint store's own record
of the cut restore waited for the next checkpoint, so the temporary file
outlived the restart. Here a real process is killed at the same point, then
the session is opened in a fresh `App`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tandem.app import App
from tandem.checkpoints.layout import Layout
from tandem.store.journal import Journal

_KILLED_RESTORE = """
import sys
from pathlib import Path
from tandem.checkpoints import Checkpointer
home, root = Path(sys.argv[1]), Path(sys.argv[2])
cp = Checkpointer(home, root)
first = cp.snapshot("before")
(root / "t5.txt").write_text("the turn's text\\n")
(root / "t6.txt").write_text("another\\n")
cp.snapshot("after")
cp.restore(first.id)  # restore.file=kill@1: dies before the first file is in place
"""


def test_soak_seed_11_opening_the_session_rolls_back_a_cut_restore(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "project"
    root.mkdir()
    (root / "t5.txt").write_text("the user's text\n")
    journal = Journal.create(home, str(root))
    sid = journal.id
    journal.close()
    env = {**os.environ, "TANDEM_FAULTS": "restore.file=kill@1"}
    proc = subprocess.run([sys.executable, "-c", _KILLED_RESTORE, str(home), str(root)],
                          env=env, capture_output=True, timeout=60)
    assert proc.returncode != 0, proc  # killed at the point
    layout = Layout(home.resolve(), root.resolve())
    assert layout.pending.exists()  # the cut restore's record

    app = App(home)
    app.sessions.journal(sid)  # opening the session settles what the crash left

    assert not layout.pending.exists()
    left = sorted(p.name for p in root.iterdir())
    assert not [n for n in left if ".tandem-" in n], left
    # Rolled back to the state before the restore began (its deletions too).
    assert (root / "t5.txt").read_text() == "the turn's text\n"
    assert (root / "t6.txt").read_text() == "another\n"


def test_opening_a_session_without_a_cut_restore_creates_no_store(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "project"
    root.mkdir()
    journal = Journal.create(home, str(root))
    journal.close()
    App(home).sessions.journal(journal.id)
    assert not Layout(home.resolve(), root.resolve()).dir.exists()


def test_opening_a_session_whose_root_is_gone_still_opens(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "project"
    root.mkdir()
    journal = Journal.create(home, str(root))
    journal.close()
    root.rmdir()
    assert App(home).sessions.journal(journal.id).id == journal.id
