"""The overview's turn and token counts are the session header's (``sessions/usage``).

A user compares the two: they must never disagree, rewinds and undos included.
"""

from __future__ import annotations

from pathlib import Path

from tandem.overview.facts import read_facts
from tandem.store.entry_cache import EntryCache
from tandem.store.journal import Journal
from tandem.turns.usage import session_usage


def _turn(journal: Journal, turn: int, tokens_in: int, tokens_out: int) -> None:
    journal.append({"type": "turn_start", "turn": turn, "origin": "chat",
                    "provider": "openai:m", "model": "m"})
    journal.append({"type": "user", "turn": turn, "text": f"request {turn}"})
    journal.append({"type": "turn_end", "turn": turn, "outcome": "succeeded",
                    "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}})


def test_counts_after_rewinds_and_an_undo_are_the_headers(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    journal = Journal.create(tmp_path / "home", str(project))
    for turn in (1, 2, 3):
        _turn(journal, turn, 10 * turn, turn)
    rewind = journal.append({"type": "rewind", "before_turn": 2})
    for turn in (4, 5, 6):
        _turn(journal, turn, 5, 5)
    journal.append({"type": "rewind_undo", "rewind_seq": rewind.seq, "before_turn": 2})
    journal.sync()
    total, _ = session_usage(EntryCache().entries(journal.path))  # what the header shows
    facts = read_facts(str(journal.path))
    assert (facts.turns, facts.input_tokens, facts.output_tokens) == (
        total.turns, total.input_tokens, total.output_tokens) == (6, 75, 21)
    assert facts.provider == "openai:m"
    journal.close()
