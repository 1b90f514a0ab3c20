"""docs/protocol.md is generated from the models: it must match them."""

from __future__ import annotations

from pathlib import Path

from tandem.server.protocol_doc import render
from tandem.server.table import build_table

DOC = Path(__file__).resolve().parents[3] / "docs" / "protocol.md"


def test_protocol_doc_matches_the_method_table() -> None:
    assert DOC.read_text(encoding="utf-8") == render(build_table()), (
        "docs/protocol.md drifted: run `python -m tandem.server.protocol_doc > docs/protocol.md`")


def test_every_method_is_documented_with_its_params() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name, spec in build_table().items():
        assert f"### `{name}`" in text
        for field in spec.params.model_fields:
            assert f"`:{field.replace('_', '-')}`" in text
