"""`EntryCache`: parsed journal entries, extended by appended lines only."""

from __future__ import annotations

import os
from pathlib import Path

from tandem.store.entry_cache import EntryCache, journal_dicts
from tandem.store.journal import Journal


def _journal(tmp_path: Path) -> Journal:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    return Journal.create(tmp_path / "home", str(cwd), title="t")


def test_cache_follows_appends_header_rewrites_and_cut_backs(tmp_path: Path) -> None:
    journal = _journal(tmp_path)
    path = Path(journal.path)
    cache = EntryCache()
    assert cache.entries(path) == []
    journal.append({"type": "user", "turn": 1, "text": "one"})
    journal.append({"type": "assistant", "turn": 1, "text": "two"})
    assert [e["text"] for e in cache.entries(path)] == ["one", "two"]
    journal.append({"type": "user", "turn": 2, "text": "three"})
    assert [e["text"] for e in cache.entries(path)] == ["one", "two", "three"]
    assert cache.entries(path) == journal_dicts(journal)
    # a header rewrite (temp + rename) changes the header's length: start over
    journal.update_header(title="a much longer title than before " * 3)
    journal.append({"type": "user", "turn": 3, "text": "four"})
    assert [e["text"] for e in cache.entries(path)] == ["one", "two", "three", "four"]
    # a half-written last line is not read until it is complete
    with open(path, "ab") as f:
        f.write(b'{"type":"user","turn":4,"text":"fi')
    assert len(cache.entries(path)) == 4
    with open(path, "ab") as f:
        f.write(b've","seq":99,"ts":"x"}\n')
    assert cache.entries(path)[-1]["text"] == "five"
    # a cut-back file (torn tail set aside) is re-read from the start
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size - 40)
    os.utime(path)
    assert [e["text"] for e in cache.entries(path)] == ["one", "two", "three", "four"]
    # a line that is not a JSON object is skipped
    with open(path, "ab") as f:
        f.write(b"[1, 2]\nnot json\n")
    assert len(cache.entries(path)) == 4
    journal.close()
