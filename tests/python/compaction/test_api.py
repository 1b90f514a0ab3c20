"""The compaction methods join the server's method table without clashes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tandem.adapters.sessions import METHODS
from tandem.protocol.sessions import CompactParams, StatusParams


def test_methods_join_the_table_without_clashes() -> None:
    from tandem.server.table import DOMAIN_APIS, build_table

    table = build_table(DOMAIN_APIS)
    for spec in (s for s in METHODS if "compact" in s.name):
        assert table[spec.name] is spec
        assert spec.doc and spec.name.startswith("sessions/")


def test_params_are_validated() -> None:
    assert CompactParams.model_validate({"session": "abc", "provider": None}).provider is None
    for bad in ({}, {"session": ""}, {"session": "a", "extra": 1}):
        with pytest.raises(ValidationError):
            CompactParams.model_validate(bad)
    with pytest.raises(ValidationError):
        StatusParams.model_validate({"session": "a", "turn": 3})
