"""Soak seed 1: a revert after a rewind counts for the latest turn still visible.

Shrunk from the soak to four operations: turn 1 writes t1.txt, turn 2 only
answers, a rewind before turn 2, then a review revert of turn 1's t1.txt.
The revert was filed under turn 2 (the last turn that had ended, hidden by
the rewind), so the next rewind plan expected turn 1's end state and listed
t1.txt as changed by someone else. The entries are `Journal.append`'s own.
"""

from __future__ import annotations

from pathlib import Path

from tandem.rewind.plan import turn_facts
from tandem.store.journal import Journal


def test_soak_seed_1_a_revert_after_a_rewind_is_tandems_change(tmp_path: Path) -> None:
    journal = Journal.create(tmp_path / "home", str(tmp_path))
    for turn, start, end in ((1, "c0", "c1"), (2, "c1", "c2")):
        journal.append({"type": "turn_start", "turn": turn, "origin": "chat",
                        "provider": "openai:m", "checkpoint": start})
        journal.append({"type": "user", "turn": turn, "text": f"turn {turn}"})
        journal.append({"type": "turn_end", "turn": turn, "outcome": "succeeded",
                        "patch": {"from_id": start, "to_id": end, "files": []}})
    journal.append({"type": "rewind", "before_turn": 2, "checkpoint": "c1", "backup": "c2",
                    "restored": [], "deleted": [], "turns": [2]})
    journal.append({"type": "revert", "of_turn": 1, "path": "t1.txt", "hunk": None,
                    "paths": ["t1.txt"], "before": "c1", "after": "r1",
                    "restored": [], "deleted": ["t1.txt"]})
    entries = [e.model_dump() for e in journal.entries()]
    journal.close()
    assert turn_facts(entries, 1).expected_after == "r1"
