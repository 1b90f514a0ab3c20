"""The journal store: format, round trips, validation, torn tails, header rewrites, listing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tandem.protocol.base import TandemError
from tandem.store import layout
from tandem.store.ids import is_session_id, uuid7
from tandem.store.journal import Journal, read_header
from tandem.store.listing import list_sessions, summarize
from tandem.store.models import ENTRY_TYPES, TurnStart, User


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_uuid7_is_time_ordered_and_versioned() -> None:
    ids = [uuid7(ms) for ms in (1, 2, 10**12)]
    assert ids == sorted(ids)
    assert all(is_session_id(i) and i[14] == "7" and i[19] in "89ab" for i in ids)
    assert len({uuid7(5) for _ in range(100)}) == 100
    with pytest.raises(ValueError):
        uuid7(-1)


def test_slug_never_merges_dash_and_slash(home: Path, tmp_path: Path) -> None:
    one, two = tmp_path / "a-b", tmp_path / "a" / "b"
    assert layout.slug_dir(home, str(one)) != layout.slug_dir(home, str(two))
    assert layout.base_slug(str(one)).startswith("a-b-")


def test_slug_collision_gets_its_own_folder(home: Path, tmp_path: Path) -> None:
    """Even if a hash collided, the .cwd marker keeps two directories apart."""
    first = layout.slug_dir(home, str(tmp_path / "p"), create=True)
    (first / layout.CWD_MARKER).write_text("/some/other/dir")
    second = layout.slug_dir(home, str(tmp_path / "p"), create=True)
    assert second != first and second.name == first.name + "-2"
    assert layout.slug_dir(home, str(tmp_path / "p")) == second


def test_create_header_and_layout(home: Path, tmp_path: Path) -> None:
    j = Journal.create(home, str(tmp_path), title="fix it")
    try:
        assert j.writable and is_session_id(j.id)
        created, sid = layout.parse_journal_name(j.path.name)  # type: ignore[misc]
        assert sid == j.id and j.path.parent == layout.slug_dir(home, str(tmp_path))
        header = lines(j.path)[0]
        assert header == {
            "type": "header",
            "version": 1,
            "id": j.id,
            "cwd": str(tmp_path.resolve()),
            "created": j.header.created,
            "title": "fix it",
            "previous_files": [],
        }
        assert j.artifacts_dir == j.path.with_suffix("")
    finally:
        j.close()


def test_append_assigns_seq_ts_and_roundtrips(home: Path, tmp_path: Path) -> None:
    with Journal.create(home, str(tmp_path)) as j:
        e1 = j.append({"type": "turn_start", "turn": 1, "origin": "chat", "provider": "p"})
        e2 = j.append(User(type="user", seq=99, ts="x", turn=1, text="a\nb\u2028c"))
        e3 = j.append({"type": "from_the_future", "turn": 1, "nested": {"k": [1, None]}})
        e4 = j.append({"type": "rewind", "before_turn": 1})
        assert [e.seq for e in (e1, e2, e3, e4)] == [1, 2, 3, 4]
        assert isinstance(e1, TurnStart) and e2.ts.endswith("Z")
        j.sync()
        got = list(j.entries())
    assert [e.model_dump() for e in got] == [e.model_dump() for e in (e1, e2, e3, e4)]
    raw = lines(j.path)
    assert len(raw) == 5
    assert raw[3] == {
        "type": "from_the_future",
        "seq": 3,
        "ts": e3.ts,
        "turn": 1,
        "nested": {"k": [1, None]},
    }
    assert "turn" not in raw[4]


def test_unknown_entries_survive_header_rewrite_byte_for_byte(home: Path, tmp_path: Path) -> None:
    with Journal.create(home, str(tmp_path)) as j:
        j.append({"type": "x_new", "payload": {"z": 1, "a": 2}})
        j.sync()
        body = j.path.read_bytes().split(b"\n", 1)[1]
        j.update_header(title="renamed")
        assert j.path.read_bytes().split(b"\n", 1)[1] == body
        j.append({"type": "user", "turn": 1, "text": "after"})
        assert j.last_seq == 2
    assert read_header(j.path)[0].title == "renamed"
    assert [e.type for e in Journal.open(j.path, writable=False).entries()] == ["x_new", "user"]


def test_every_known_type_validates(home: Path, tmp_path: Path) -> None:
    samples = {
        "turn_start": {"turn": 1, "origin": "directive", "checkpoint": None},
        "user": {"turn": 1, "text": "t"},
        "assistant": {"turn": 1, "text": "t"},
        "reasoning": {"turn": 1, "text": "t"},
        "tool_call": {"turn": 1, "call_id": "c", "name": "read", "kind": "read", "input": {}},
        "tool_result": {"turn": 1, "call_id": "c", "status": "completed", "output": "o"},
        "interaction": {"turn": 1, "interaction_id": "i", "kind": "permission", "options": []},
        "interaction_answer": {"turn": 1, "interaction_id": "i", "answer": "allow_once"},
        "turn_end": {"turn": 1, "outcome": "aborted", "error": "x", "usage": {}},
        "directive_open": {"turn": 1, "workspace": "w", "directive": "d", "action": "implement"},
        "directive_close": {"turn": 1, "directive": "d", "outcome": "succeeded"},
        "rewind": {"before_turn": 1},
        "rewind_undo": {"rewind_seq": 3, "before_turn": 1},
        "rewind_recovery": {"before_turn": 1, "outcome": "rolled-back"},
        "revert": {"of_turn": 1, "path": "a", "hunk": 0, "paths": ["a"], "before": "b",
                   "after": "c"},
        "compaction": {"summary": "s", "first_kept_turn": 2},
        "acp_session": {"acp_session_id": "a", "how": "new"},
        "remote_turn": {"turn": 1, "conversation_id": "c", "after_event_id": None},
        "acp_option": {"agent": "claude", "option": "mode", "value": "plan"},
        "plan": {"turn": 1, "entries": [{"content": "c", "status": "pending"}]},
        "provider_change": {"provider": "openai:m", "model": "m"},
        "queue": {"op": "add", "item": "q1", "text": "next"},
        "steer": {"turn": 1, "text": "use b.txt", "given": "2026-01-01T00:00:00.000Z"},
    }
    assert set(samples) == set(ENTRY_TYPES)
    with Journal.create(home, str(tmp_path)) as j:
        for kind, fields in samples.items():
            assert type(j.append({"type": kind, **fields})) is ENTRY_TYPES[kind]


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "user", "turn": 1},  # no text
        {"type": "turn_end", "turn": 1, "outcome": "maybe"},
        {"type": "header", "id": "x"},
        {"turn": 1},
        {"type": ""},
        "not a dict",
    ],
)
def test_invalid_entries_are_refused_and_nothing_written(home: Path, tmp_path: Path, bad) -> None:
    with Journal.create(home, str(tmp_path)) as j:
        size = j.path.stat().st_size
        with pytest.raises(TandemError) as exc:
            j.append(bad)
        assert exc.value.code == "invalid"
        assert j.path.stat().st_size == size and j.last_seq == 0


def test_read_only_refuses_writes(home: Path, tmp_path: Path) -> None:
    with Journal.create(home, str(tmp_path)) as j:
        j.append({"type": "user", "turn": 1, "text": "a"})
        ro = Journal.open(j.path, writable=False)
        assert not ro.writable and ro.last_seq == 1
        for call in (
            lambda: ro.append({"type": "user", "turn": 1, "text": "b"}),
            ro.sync,
            lambda: ro.update_header(title="x"),
        ):
            with pytest.raises(TandemError) as exc:
                call()
            assert exc.value.code == "read-only"
        ro.close()
    with pytest.raises(TandemError):
        j.append({"type": "user", "turn": 1, "text": "closed"})


def test_torn_tail_is_set_aside_and_reported(home: Path, tmp_path: Path) -> None:
    with Journal.create(home, str(tmp_path)) as j:
        for i in range(3):
            j.append({"type": "user", "turn": 1, "text": f"m{i}"})
    good = j.path.read_bytes()
    torn = b'{"type":"assistant","seq":4,"ts":"2026-01-01T00:00:00Z","turn":1,"te'
    with open(j.path, "ab") as f:
        f.write(torn)
    ro = Journal.open(j.path, writable=False)
    assert ro.last_seq == 3 and len(list(ro.entries())) == 3
    assert any("incomplete" in n for n in ro.notices)
    assert j.path.read_bytes() == good + torn  # read-only changes nothing
    rw = Journal.open(j.path)
    assert any("set aside" in n for n in rw.notices)
    assert j.path.read_bytes() == good
    (aside,) = list(rw.artifacts_dir.glob("torn-*.part"))
    assert aside.read_bytes() == torn
    assert rw.append({"type": "assistant", "turn": 1, "text": "ok"}).seq == 4
    rw.close()
    assert [e.seq for e in Journal.open(j.path, writable=False).entries()] == [1, 2, 3, 4]


def test_damaged_middle_line_is_skipped_with_notice(home: Path, tmp_path: Path) -> None:
    with Journal.create(home, str(tmp_path)) as j:
        j.append({"type": "user", "turn": 1, "text": "a"})
    with open(j.path, "ab") as f:
        f.write(b"\x00\x00garbage\n")
    with Journal.open(j.path) as j2:
        assert j2.last_seq == 1
        j2.append({"type": "user", "turn": 1, "text": "b"})
        assert [e.seq for e in j2.entries()] == [1, 2]
        assert any(":3: unreadable" in n for n in j2.notices)


def test_open_rejects_bad_files(tmp_path: Path) -> None:
    for name, content, code in [
        ("x.jsonl", b"", "corrupt"),
        ("y.jsonl", b'{"type":"header"}\n', "corrupt"),
        ("z.jsonl", b"not json\n", "corrupt"),
        ("w.txt", b"", "invalid"),
    ]:
        (tmp_path / name).write_bytes(content)
        with pytest.raises(TandemError) as exc:
            Journal.open(tmp_path / name)
        assert exc.value.code == code
    with pytest.raises(TandemError) as exc:
        Journal.open(tmp_path / "missing.jsonl")
    assert exc.value.code == "not-found"


def test_page_after_and_before(home: Path, tmp_path: Path) -> None:
    with Journal.create(home, str(tmp_path)) as j:
        for i in range(10):
            j.append({"type": "user", "turn": i + 1, "text": str(i)})
        assert [e.seq for e in j.page(after=3, limit=4)] == [4, 5, 6, 7]
        assert [e.seq for e in j.page(before=5, limit=3)] == [2, 3, 4]
        assert [e.seq for e in j.page(limit=2)] == [9, 10]  # the tail by default
        assert [e.seq for e in j.page(after=8, limit=5)] == [9, 10]  # read backwards
        assert [e.seq for e in j.page(after=0, limit=3)] == [1, 2, 3]
        assert j.page(after=10) == []
        big = j.append(
            {
                "type": "tool_result",
                "turn": 11,
                "call_id": "c",
                "status": "completed",
                "output": "y" * 200_000,
            }
        )  # spans several backward chunks
        assert [e.seq for e in j.page(limit=3)] == [9, 10, 11]
        assert j.page(limit=1)[0].model_dump() == big.model_dump()
        assert [e.seq for e in j.page(before=11, limit=100)] == list(range(1, 11))
        with pytest.raises(TandemError):
            j.page(after=1, before=3)
        with pytest.raises(TandemError):
            j.page(limit=0)


def test_listing_reads_header_and_tail(home: Path, tmp_path: Path) -> None:
    p1, p2 = tmp_path / "p1", tmp_path / "p2"
    p1.mkdir()
    p2.mkdir()
    with Journal.create(home, str(p1), title="one") as a:
        a.append({"type": "user", "turn": 1, "text": "x" * 20000})  # longer than the tail window
    with Journal.create(home, str(p2), title="two") as b:
        pass
    rows = list_sessions(home)
    assert [r.title for r in rows] == ["two", "one"] or [r.title for r in rows] == ["one", "two"]
    one = summarize(a.path)
    assert one is not None and one.last_seq == 1 and one.cwd_exists
    two = summarize(b.path)
    assert two is not None and two.last_seq == 0 and two.last_activity == two.created
    assert [r.title for r in list_sessions(home, str(p1))] == ["one"]
    with open(a.path, "ab") as f:
        f.write(b'{"torn')
    again = summarize(a.path)
    assert again is not None and again.last_seq == 1
    (a.path.parent / "20260101T000000Z_00000000-0000-7000-8000-000000000000.jsonl").write_text("x")
    rows = list_sessions(home)  # an unreadable journal is listed as damaged, last; not fatal
    assert len(rows) == 3 and [bool(r.damaged) for r in rows] == [False, False, True]
    os.rename(p1, tmp_path / "gone")
    assert summarize(a.path).cwd_exists is False  # type: ignore[union-attr]


def test_read_only_page_sees_another_writers_new_entries(home: Path, tmp_path: Path) -> None:
    with Journal.create(home, str(tmp_path)) as writer:
        writer.append({"type": "user", "turn": 1, "text": "a"})
        reader = Journal.open(writer.path)
        assert not reader.writable and reader.last_seq == 1
        writer.append({"type": "assistant", "turn": 1, "text": "b"})
        assert [e.seq for e in reader.page(after=1)] == [2]
        assert reader.last_seq == 2
        reader.close()
