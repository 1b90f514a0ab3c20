"""Soak seed 4: after a files-only undo the next rewind plan expects the files it left.

The soak rewound, ran two more turns, then undid the rewind with
``files_only`` (the files back as before the rewind, the turns still
hidden). The next rewind plan listed every file the undo put back as
"changed since turn 21 ended": the undo is tandem's own change, as a revert
is, so the state it left is the expected one. The entries are the journal's
own, as `Journal.append` writes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tandem.rewind.plan import turn_facts
from tandem.store.journal import Journal


def _turn(journal: Journal, turn: int, start: str, end: str) -> None:
    journal.append({"type": "turn_start", "turn": turn, "origin": "chat",
                    "provider": "openai:m", "checkpoint": start})
    journal.append({"type": "user", "turn": turn, "text": f"turn {turn}"})
    journal.append({"type": "turn_end", "turn": turn, "outcome": "succeeded",
                    "patch": {"from_id": start, "to_id": end, "from_tree": f"t-{start}",
                              "to_tree": f"t-{end}", "files": [],
                              "completeness": "captured"}})


def _entries(tmp: Path, files_only_undo: bool) -> list[Any]:
    journal = Journal.create(tmp / "home", str(tmp))
    _turn(journal, 1, "c0", "c1")
    _turn(journal, 2, "c1", "c2")
    journal.append({"type": "rewind", "before_turn": 2, "checkpoint": "c1", "backup": "c2",
                    "restored": ["a.txt"], "deleted": [], "turns": [2]})
    _turn(journal, 3, "c1", "c3")
    if files_only_undo:
        journal.append({"type": "rewind_undo", "rewind_seq": 7, "before_turn": 2,
                        "checkpoint": "c2", "backup": "c3", "restored": ["a.txt"],
                        "deleted": ["b.txt"], "turns": [], "files_only": True})
    entries = [e.model_dump() for e in journal.entries()]
    journal.close()
    return entries


def test_soak_seed_4_a_files_only_undo_is_tandems_change_not_an_outside_one(
        tmp_path: Path) -> None:
    assert turn_facts(_entries(tmp_path / "a", False), 3).expected_after == "c3"
    # The undo put the files back as they were at c2: that is what tandem left.
    assert turn_facts(_entries(tmp_path / "b", True), 3).expected_after == "c2"
