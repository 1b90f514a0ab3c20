"""A directive's one-line ``result``: real turns through the fake model, hostile answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.script import Reply, ToolCallSpec
from ws_helpers import act, content, create, get, make_app

from tandem.adapters import directives as handlers
from tandem.directives.results import RESULT_CHARS, one_line
from tandem.protocol import directives as dp
from wire_replies import Plain

api = Plain(handlers)  # replies as the wire's JSON, read by key

pytestmark = pytest.mark.anyio

BIDI = "\u202e\u2066\u200f"
HOSTILE = ("\n\n   \x1b[2J" + BIDI + "evil\x00\x07\tline " + "x" * 1_000_000
           + "\nsecond line must not show\n")


def _model(body: dict[str, Any]) -> Reply:
    msgs = body["messages"]
    prompt = content([m for m in msgs if m.get("role") == "user"][-1])
    after_tool = msgs[-1].get("role") == "tool"
    if "HOSTILE" in prompt:
        return Reply(text=HOSTILE)
    if "FAIL-NOW" in prompt:
        return Reply(status=400, message="the model refuses\nwith a second line")
    if "WRITE-IT" in prompt:
        return Reply(text="Done.\nWrote it.") if after_tool else Reply(
            text="Writing.", tool_calls=[ToolCallSpec(
                name="write_file", input={"path": "a.txt", "content": "HELLO WORLD\n"})])
    return Reply(text="Yes: shout it.\nMore detail here.")


def _clean(text: str) -> None:
    assert len(text) <= RESULT_CHARS
    assert "\n" not in text and "\t" not in text
    assert not any(ord(c) < 0x20 or ord(c) == 0x7f for c in text)
    assert not any(c in text for c in BIDI + "\u202a\u202b\u202c\u202d\u2067\u2068\u2069")


async def test_result_of_discussion_attempt_and_failure(project: Path, tmp_path: Path,
                                                       model: Any) -> None:
    app = make_app(tmp_path / "home", model(_model))
    await create(app, project, "Make the greeting loud")
    assert (await get(app, project, "D1"))["result"] is None
    await act(app, project, "D1", "discuss", "Should we?")
    rec = await get(app, project, "D1")
    assert rec["result"]["text"] == "Yes: shout it."
    assert rec["result"]["kind"] == "discussion" and rec["result"]["turn"] == 1
    await act(app, project, "D1", "implement-this", "WRITE-IT")
    rows = await api.list_directives(app, dp.ListParams(root=str(project)))
    assert rows[0]["result"]["text"] == "1 file changed"
    assert rows[0]["result"]["files"] == 1 and rows[0]["result"]["kind"] == "attempt"
    await act(app, project, "D1", "request-changes", "FAIL-NOW please")
    result = (await get(app, project, "D1"))["result"]
    assert result["outcome"] == "failed" and result["text"].startswith("failed: ")
    assert "second line" not in result["text"]
    _clean(result["text"])


async def test_hostile_answer_is_bounded_and_cleaned(project: Path, tmp_path: Path,
                                                    model: Any) -> None:
    app = make_app(tmp_path / "home", model(_model))
    await create(app, project, "Explain")
    await act(app, project, "D1", "discuss", "HOSTILE")
    rec = await get(app, project, "D1")
    text = rec["result"]["text"]
    _clean(text)
    assert text.startswith("evil line xxx") and text.endswith("…")
    assert "second line" not in text
    # The answer itself is kept whole in the record; only the result line is cut.
    assert len(rec["discussion"][0]["answer"]) > 1_000_000


def test_one_line_edge_cases() -> None:
    assert one_line("") == "" and one_line("\n \n\t\n") == ""
    assert one_line("  a \u2028 b\nc") == "a"
    assert one_line("a" + "\u200b" * 10 + "b") == "ab"
    assert one_line("x" * 5000) == "x" * (RESULT_CHARS - 1) + "…"
    # Only the head is searched: a first line hidden after 4 KiB of blanks is not found.
    assert one_line(" " * 10_000 + "late") == ""
