"""The compaction methods join the server's method table without clashes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tandem.history.compaction_api import METHODS, CompactParams, StatusParams


def test_methods_join_the_table_without_clashes() -> None:
    from tandem.server.table import DOMAIN_APIS, build_table

    modules = tuple(dict.fromkeys((*DOMAIN_APIS, "tandem.history.compaction_api")))
    table = build_table(modules)
    for spec in METHODS:
        assert table[spec.name] is spec
        assert spec.doc and spec.name.startswith("sessions/")


def test_params_are_validated() -> None:
    assert CompactParams.model_validate({"session": "abc", "provider": None}).provider is None
    for bad in ({}, {"session": ""}, {"session": "a", "extra": 1}):
        with pytest.raises(ValidationError):
            CompactParams.model_validate(bad)
    with pytest.raises(ValidationError):
        StatusParams.model_validate({"session": "a", "turn": 3})
