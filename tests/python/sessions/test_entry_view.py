"""The typed view of journal entries (`tandem.store.entry_view`) says what the models write.

A key the model requires is required in the view; a key with a default is
optional there (an older line may lack it); every model field is in the
view; and every kind has exactly one view.
"""

from __future__ import annotations

from typing import Any, get_args, get_type_hints

from tandem.store.entry_view import VIEWS
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
