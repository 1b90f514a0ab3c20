"""Soak seed 3: compaction uses the session's chosen provider when no chat turn is visible.

The soak chose the session's provider (``turns/set-provider``), rewound
before its first turn and compacted: ``no-provider``, though the session's
next turn would run on the chosen one. The entries are the journal's own
(as `Journal.append` writes them).
"""

from __future__ import annotations

from pathlib import Path

from tandem.sessions.compaction import session_provider
from tandem.store.journal import Journal


def test_soak_seed_3_compaction_takes_the_chosen_provider_after_a_rewind_of_every_turn(
        tmp_path: Path) -> None:
    journal = Journal.create(tmp_path / "home", str(tmp_path))
    journal.append({"type": "provider_change", "provider": "openai:soak-model"})
    journal.append({"type": "turn_start", "turn": 1, "origin": "chat",
                    "provider": "openai:soak-model", "checkpoint": "c1"})
    journal.append({"type": "user", "turn": 1, "text": "hello"})
    journal.append({"type": "turn_end", "turn": 1, "outcome": "succeeded"})
    journal.append({"type": "rewind", "before_turn": 1, "checkpoint": "c1", "backup": "b1",
                    "restored": [], "deleted": [], "turns": [1]})
    entries = [e.model_dump() for e in journal.entries()]
    journal.close()
    assert session_provider(entries, {}, None) == ("openai:soak-model", "")  # type: ignore[arg-type]
    # A visible chat turn still decides, and a request overrides both.
    assert session_provider(entries[:4], {}, None) == ("openai:soak-model", "")  # type: ignore[arg-type]
    assert session_provider(entries, {}, "openai:other") == ("openai:other", "")  # type: ignore[arg-type]
