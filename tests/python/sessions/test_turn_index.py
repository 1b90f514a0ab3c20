"""The entry index by turn on hostile journals, and the bounded entry reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tandem.store.entry_cache import EntryCache
from tandem.store.journal import Journal
from tandem.store.models import DirectiveOpen, TurnEnd, TurnStart
from tandem.store.turn_index import TurnIndex


def _start(turn: int, **kw: Any) -> dict[str, Any]:
    return {"type": "turn_start", "turn": turn, "origin": "chat", "checkpoint": f"cp{turn}", **kw}


def _end(turn: int, outcome: str = "succeeded") -> dict[str, Any]:
    return {"type": "turn_end", "turn": turn, "outcome": outcome}


def test_a_turn_reads_typed_entries() -> None:
    index = TurnIndex([_start(1), {"type": "directive_open", "turn": 1, "workspace": "w",
                                   "directive": "D1", "action": "implement"},
                       {"type": "user", "turn": 1, "text": "do it"}, _end(1)])
    rec = index.get(1)
    assert rec is not None
    assert isinstance(rec.start, TurnStart) and rec.start.checkpoint == "cp1"
    assert isinstance(rec.directive_open, DirectiveOpen) and rec.directive_open.directive == "D1"
    assert isinstance(rec.end, TurnEnd) and rec.end.outcome == "succeeded"
    assert rec.user is not None and rec.user.text == "do it"
    assert index.next_turn() == 2 and index.directive_turns() == {1} and not index.open_turns()


def test_duplicate_turn_start_keeps_the_first_and_reopens() -> None:
    index = TurnIndex([_start(1), _end(1), _start(1, checkpoint="again")])
    rec = index.get(1)
    assert rec is not None and rec.start is not None and rec.start.checkpoint == "cp1"
    assert [r.turn for r in index.open_turns()] == [1]  # the crash repair closes it again
    assert index.next_turn() == 2


def test_turn_end_without_start_is_not_a_seen_turn() -> None:
    index = TurnIndex([_end(3, "failed")])
    rec = index.get(3)
    assert rec is not None and rec.start is None and rec.end is not None
    assert rec.end.outcome == "failed"
    assert index.seen == set() and index.next_turn() == 1 and not index.open_turns()


def test_unknown_kinds_and_bad_turns_change_nothing() -> None:
    index = TurnIndex([_start(1), {"type": "from_the_future", "turn": 1, "x": 1},
                       {"type": "user", "turn": "1", "text": "not a turn number"},
                       {"type": "user", "turn": True, "text": "a bool is no turn"},
                       {"type": "assistant", "turn": 1}, _end(1)])
    rec = index.get(1)
    assert rec is not None and [e["type"] for e in rec.entries] == [
        "turn_start", "from_the_future", "assistant", "turn_end"]
    assert rec.user is None  # none of the two requests names turn 1 as an int
    assert set(index.turns) == {1} and not index.open_turns()


def test_an_invalid_entry_of_a_known_kind_is_untyped_not_fatal() -> None:
    index = TurnIndex([{"type": "turn_start", "turn": 1, "origin": "nowhere"}])
    rec = index.get(1)
    assert rec is not None and rec.start is None  # not a valid TurnStart
    assert index.seen == {1}  # but the turn number stays taken


def test_a_rewound_turn_is_hidden_and_a_later_turn_is_not() -> None:
    index = TurnIndex([_start(1), _end(1), _start(2), _end(2),
                       {"type": "rewind", "before_turn": 2}, _start(3), _end(3)])
    assert index.seen == {1, 2, 3} and index.hidden == {2}
    assert index.next_turn() == 4


def test_an_undone_rewind_hides_nothing_and_a_files_only_undo_keeps_it() -> None:
    rewound = [_start(1), _end(1), _start(2), _end(2),
               {"type": "rewind", "seq": 5, "before_turn": 1}]
    index = TurnIndex(rewound)
    assert index.hidden == {1, 2}
    index.extend([{"type": "rewind_undo", "seq": 6, "rewind_seq": 5, "files_only": True}])
    assert index.hidden == {1, 2}  # only the files came back
    index.extend([{"type": "rewind_undo", "seq": 7, "rewind_seq": 5}])
    assert index.hidden == set()
    assert TurnIndex(rewound + [{"type": "rewind_undo", "rewind_seq": 99}]).hidden == {1, 2}


def test_an_open_directive_is_named_until_closed() -> None:
    opened = {"type": "directive_open", "turn": 1, "workspace": "w", "directive": "D1",
              "action": "implement"}
    index = TurnIndex([_start(1), opened])
    (rec,) = index.open_turns()
    assert rec.open_directive == "D1"
    index.extend([{"type": "directive_close", "turn": 1, "directive": "D1", "outcome": "ok"}])
    assert rec.open_directive is None and rec.directive_close is not None
    index.extend([_end(1)])
    assert not index.open_turns() and rec.end is not None  # typed views follow the growth


def test_the_cache_extends_the_index_as_the_journal_grows(tmp_path: Path) -> None:
    cwd = tmp_path / "p"
    cwd.mkdir()
    journal = Journal.create(tmp_path / "home", str(cwd))
    cache = EntryCache()
    journal.append(_start(1))
    first = cache.index(journal.path)
    assert [r.turn for r in first.open_turns()] == [1]
    journal.append(_end(1))
    again = cache.index(journal.path)
    assert again is first and not again.open_turns() and again.next_turn() == 2
    journal.close()


def test_the_cache_keeps_a_bounded_number_of_journals(tmp_path: Path) -> None:
    cache = EntryCache(limit=2)
    paths = []
    for n in range(3):
        cwd = tmp_path / f"p{n}"
        cwd.mkdir()
        journal = Journal.create(tmp_path / "home", str(cwd))
        journal.append(_start(1))
        journal.close()
        paths.append(journal.path)
        assert cache.index(journal.path).next_turn() == 2
    assert len(cache._files) == 2 and str(paths[0]) not in cache._files
    assert cache.read(tmp_path / "gone.jsonl") == []  # unreadable: no entries, no error
