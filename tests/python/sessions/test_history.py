"""``sessions/history``: the compact form of a session's entries for a view."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tandem.app import App
from tandem.protocol import sexp
from tandem.protocol.base import Printed
from tandem.sessions import requests
from tandem.sessions.history import ROW_FIELDS, HistoryRows

from .adapter_app import call, plain_call


def wire(app: App, **params: Any) -> Any:
    """`sessions/history` as Emacs receives it: the reply printed, then read back."""
    return sexp.loads(sexp.dumps(call(app, "sessions/history", **params)))


def _expand(row: list[Any]) -> dict[str, Any]:
    """A row back into the entry's dict (what Emacs does with the vector)."""
    out = {k: v for k, v in zip(ROW_FIELDS, row[:5], strict=True) if v is not None}
    out.update(row[5] or {})
    return out


def _session(app: App, project) -> tuple[str, Any]:
    made = call(app, "sessions/new", cwd=str(project("a")))
    j = app.sessions.manager.journal(made.id)
    for turn in (1, 2):
        j.append({"type": "turn_start", "turn": turn, "origin": "chat", "provider": "openai:m",
                  "model": "m"})
        j.append({"type": "user", "turn": turn, "text": f"question {turn}"})
        j.append({"type": "tool_call", "turn": turn, "call_id": f"c{turn}", "name": "read_file",
                  "input": {"path": "a.txt"}})
        j.append({"type": "tool_result", "turn": turn, "call_id": f"c{turn}", "status": "completed",
                  "output": "text"})
        j.append({"type": "assistant", "turn": turn, "text": "**answer**\n"})
        j.append({"type": "turn_end", "turn": turn, "outcome": "succeeded",
                  "usage": {"input_tokens": 3, "output_tokens": 4}})
    j.append({"type": "rewind", "before_turn": 2, "checkpoint": "abc"})
    return made.id, j


def test_history_holds_what_entries_holds_as_rows(app: App, project) -> None:
    sid, _ = _session(app, project)
    old = plain_call(app, "sessions/entries", session=sid, limit=10000)
    new = wire(app, session=sid)
    assert new["last_seq"] == old["last_seq"] == 13 and new["session"] == sid
    assert all(type(r) is list and len(r) == 6 for r in new["entries"])
    assert [r[0] for r in new["entries"]] == [e["seq"] for e in old["entries"]]
    for row, entry in zip(new["entries"], old["entries"], strict=True):
        got = _expand(list(row))
        # Every field written is there with its value (the old method adds
        # the models' defaults besides: permission_mode, kind, title…).
        assert got.items() <= entry.items()
        assert {k for k, v in entry.items() if v not in (None, "", [], {}, "ask", "other")} \
            <= got.keys() | {"kind", "permission_mode"}
    rewind = new["entries"][-1]
    assert rewind[1] == "rewind" and rewind[2] is None and rewind[5]["before_turn"] == 2


def test_history_pages_before_a_seq_and_limits(app: App, project) -> None:
    sid, j = _session(app, project)
    page = wire(app, session=sid, before=8, limit=3)
    assert [r[0] for r in page["entries"]] == [5, 6, 7]
    assert [r[0] for r in wire(app, session=sid, before=3)["entries"]] == [1, 2]
    assert wire(app, session=sid, before=1)["entries"] == []  # "()": nil in Emacs
    # Appended after a first read: the shared cache extends, the next call sees it.
    j.append({"type": "user", "turn": 3, "text": "later"})
    last = wire(app, session=sid, limit=1)
    assert [list(r) for r in last["entries"]] == [[14, "user", 3, last["entries"][0][3], "later",
                                                   None]]
    for bad in ({"limit": 0}, {"limit": 100001}, {"before": 0}):
        with pytest.raises(ValidationError):
            call(app, "sessions/history", session=sid, **bad)


def test_history_rows_reach_emacs_as_vectors(app: App, project) -> None:
    sid, _ = _session(app, project)
    reply = call(app, "sessions/history", session=sid, before=3)
    text = sexp.dumps(reply)
    assert '[1 "turn_start" 1 "' in text and '(:origin "chat"' in text
    assert '[2 "user" 1 "' in text and '"question 1" nil]' in text
    back = sexp.loads(text)
    assert [r[:3] for r in back["entries"]] == [[1, "turn_start", 1], [2, "user", 1]]


def test_hand_edited_lines_lose_nothing_and_break_nothing(app: App, project) -> None:
    sid, j = _session(app, project)
    with open(j.path, "a", encoding="utf-8") as f:
        f.write('{"type":"future_kind","ts":"x","text":{"not":"a string"},"turn":"7"}\n')
        f.write('{"seq":15,"type":"future_kind","ts":5,"text":{"not":"a string"},"turn":"7"}\n')
        f.write('not json at all\n')
    rows = wire(app, session=sid)["entries"]
    # No seq: skipped (sessions/entries skips it too); wrong types: kept in REST.
    assert rows[-1][:5] == [15, "future_kind", None, None, None]
    assert rows[-1][5] == {"ts": 5, "text": {"not": "a string"}, "turn": "7"}
    assert [r[0] for r in rows][-2:] == [13, 15]


def _fresh(app: App, sid: str, **params: Any) -> str:
    """The reply printed now from rows made now: what the kept text must equal."""
    reply = requests.history_page(app.sessions, sid, params.get("before"),
                                  params.get("limit", 100000), lambda: HistoryRows())
    assert type(reply["entries"]) is list  # rows, printed below one by one
    return sexp.dumps(reply)


def test_kept_printed_rows_equal_a_fresh_print_after_every_change(app: App, project) -> None:
    sid, j = _session(app, project)

    def same(**params: Any) -> None:
        kept = call(app, "sessions/history", session=sid, **params)
        assert type(kept.entries) is Printed  # the join of kept text, not rows printed now
        assert sexp.dumps(kept) == _fresh(app, sid, **params)

    same()
    same(before=8, limit=3)
    j.append({"type": "user", "turn": 3, "text": 'appended "quoted" \\ and \n newline ✓'})
    same()
    j.append({"type": "rewind", "before_turn": 1, "checkpoint": "def"})
    same()
    j.append({"type": "compaction", "summary": "s", "first_turn": 1, "last_turn": 2,
              "kept_turns": [], "tokens_before": 10, "tokens_after": 2})
    same()
    # A rewritten header is a new file (write-temp-rename): the kept rows start over.
    j.update_header(title="renamed")
    j.append({"type": "user", "turn": 4, "text": "after the rename"})
    same()
    same(before=15, limit=4)
    # A tail cut back (a smaller file): the rows start over too, nothing stale is sent.
    j.sync()
    data = j.path.read_bytes()
    lines = data.splitlines(keepends=True)
    j.path.write_bytes(b"".join(lines[:-2]))
    same()
    assert sexp.loads(sexp.dumps(call(app, "sessions/history", session=sid)))["entries"][-1][0] \
        == len(lines) - 3
