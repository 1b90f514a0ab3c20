"""The typed view of journal entries (`tandem.store.entry_view`) says what the models write.

A key the model requires is required in the view; a key with a default is
optional there (an older line may lack it); every model field is in the
view; and every kind has exactly one view.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_type_hints

from tandem.store.entry_cache import EntryCache, journal_dicts
from tandem.store.entry_view import VIEWS
from tandem.store.journal import Journal
from tandem.store.models import ENTRY_TYPES, Entry


def _view_kind(view: type[Any]) -> str:
    (kind,) = get_args(get_type_hints(view)["type"])
    return str(kind)


def test_every_entry_kind_has_one_view_and_no_view_is_extra() -> None:
    kinds = [_view_kind(v) for v in VIEWS]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) == set(ENTRY_TYPES)


def test_view_keys_follow_the_model_fields() -> None:
    views = {_view_kind(v): v for v in VIEWS}
    for kind, model in ENTRY_TYPES.items():
        view = views[kind]
        keys = set(view.__required_keys__) | set(view.__optional_keys__)
        fields = model.model_fields
        assert set(fields) <= keys, (kind, set(fields) - keys)
        required = {name for name, f in fields.items() if f.is_required()} | {"type"}
        if fields["turn"].is_required():
            assert "turn" in view.__required_keys__, kind
        else:
            # `turn` is the base's optional field: absent on entries outside a turn.
            required.discard("turn")
            assert "turn" in view.__optional_keys__, kind
        assert set(view.__required_keys__) == required, (
            kind, set(view.__required_keys__) ^ required)


def test_base_fields_are_in_every_view() -> None:
    for view in VIEWS:
        assert {"type", "seq", "ts"} <= set(view.__required_keys__)
    assert set(Entry.model_fields) == {"type", "seq", "ts", "turn"}


def test_the_reader_skips_lines_the_view_would_lie_about(tmp_path: Path) -> None:
    """A hand-edited line without a key its kind requires, or without a type, is not read
    as an entry (the model reader skips the same lines); unknown kinds stay."""
    journal = Journal.create(tmp_path / "home", str(tmp_path), title="t")
    journal.append({"type": "turn_start", "turn": 1, "origin": "chat"})
    journal.sync()
    with open(journal.path, "ab") as f:
        f.write(b'{"type":"turn_start","turn":2,"seq":2,"ts":"x"}\n')  # no origin
        f.write(b'{"seq":3,"ts":"x","turn":2}\n')  # no type
        f.write(b'{"type":"turn_end","seq":4,"ts":"x","outcome":"succeeded"}\n')  # no turn
        f.write(b'{"type":"newer_kind","seq":5,"ts":"x","turn":2}\n')
    read = journal_dicts(journal)
    assert [(e["type"], e["seq"]) for e in read] == [("turn_start", 1), ("newer_kind", 5)]
    assert [e.seq for e in journal.entries()] == [1, 5]
    cache = EntryCache()
    assert [e["seq"] for e in cache.entries(Path(journal.path))] == [1, 5]
    assert cache.index(Path(journal.path)).seen == {1}
    journal.close()
