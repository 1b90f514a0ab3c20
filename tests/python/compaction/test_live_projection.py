"""`LiveProjection`: the incremental projection equals the full one after every change.

Golden tests: the reference is `project` over the same entries. They cover
appends, compaction, rewind (turns hidden), rewind undo, a directive
boundary for a turn already shown, relocation (a header rewrite: a new
inode) and a journal read again from the start, through the real entry
cache and a real journal file; and random journals grown the way the
backend grows them, fed one entry at a time and in chunks.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from tandem.sessions.compaction import estimate_tokens
from tandem.sessions.live_projection import LiveProjection
from tandem.sessions.projection import project
from tandem.store.entry_cache import EntryCache
from tandem.store.journal import Journal

from .test_projected_tail import _random_journal


def _dump(messages: list[Any]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


def _same(live: LiveProjection, entries: list[dict[str, Any]]) -> None:
    """LIVE holds exactly the full projection of ENTRIES, and the same token estimate."""
    full = project(entries)
    assert _dump(live.messages()) == _dump(full)
    assert live.tokens() == estimate_tokens(full)
    assert live.tokens("next request") == estimate_tokens(
        [*full, project([{"type": "user", "turn": 1, "text": "next request"}])[0]])


def _turn(n: int, *, tools: bool = False) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "turn_start", "turn": n, "origin": "chat"},
                                 {"type": "user", "turn": n, "text": f"request {n}"}]
    if tools:
        out += [{"type": "assistant", "turn": n, "text": f"looking {n}"},
                {"type": "tool_call", "turn": n, "call_id": f"c{n}", "name": "read",
                 "input": {"path": f"f{n}.py"}},
                {"type": "tool_result", "turn": n, "call_id": f"c{n}", "status": "completed",
                 "output": f"contents {n}"}]
    out += [{"type": "assistant", "turn": n, "text": f"answer {n} é"},
            {"type": "turn_end", "turn": n, "outcome": "succeeded"}]
    return out


def _open(n: int) -> dict[str, Any]:
    return {"type": "directive_open", "turn": n, "workspace": "w", "directive": f"D{n}",
            "action": "implement"}


def _grow(journal: Journal, cache: EntryCache, live_of: Any, entries: list[dict[str, Any]],
          ) -> LiveProjection:
    for e in entries:
        journal.append(e)
    live = cache.view(Path(journal.path), live_of)
    _same(live, cache.entries(Path(journal.path)))
    return live


def test_live_projection_follows_every_change_of_a_real_journal(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    journal = Journal.create(tmp_path / "home", str(cwd), title="t")
    path = Path(journal.path)
    cache = EntryCache()
    live = _grow(journal, cache, LiveProjection, [])
    for n in range(1, 21):
        live = _grow(journal, cache, LiveProjection, _turn(n, tools=n % 3 == 0))
    assert live.rebuilds == 0  # twenty sends, each only appended

    # a directive span: its turn never shows
    span = _turn(21)
    span.insert(1, _open(21))
    live = _grow(journal, cache, LiveProjection, span)
    assert live.rebuilds == 0
    # a directive boundary written after its turn's messages (a hostile journal)
    live = _grow(journal, cache, LiveProjection,
                 [*_turn(22), _open(22)])
    assert live.rebuilds == 1

    # a rewind hiding the newest turns: the tail is cut, no rebuild
    live = _grow(journal, cache, LiveProjection, [{"type": "rewind", "before_turn": 18}])
    assert live.rebuilds == 1
    rewind_seq = cache.entries(path)[-1]["seq"]
    live = _grow(journal, cache, LiveProjection, _turn(23))
    # its undo brings the turns back (one rebuild)
    live = _grow(journal, cache, LiveProjection,
                 [{"type": "rewind_undo", "rewind_seq": rewind_seq, "before_turn": 18}])
    assert live.rebuilds == 2
    # a files-only undo changes nothing in the context
    live = _grow(journal, cache, LiveProjection,
                 [{"type": "rewind_undo", "rewind_seq": rewind_seq, "before_turn": 18,
                   "files_only": True}])
    assert live.rebuilds == 2

    # compaction: the projection starts from the summary and the kept turns
    live = _grow(journal, cache, LiveProjection,
                 [{"type": "compaction", "summary": "S", "first_kept_turn": 20,
                   "tokens_before": 1, "tokens_after": 1}])
    assert live.messages()[0].text.endswith("S")
    for n in range(24, 27):
        live = _grow(journal, cache, LiveProjection, _turn(n, tools=True))
    assert live.rebuilds == 3

    # relocation rewrites the header (write-temp-rename: a new inode): a fresh view
    journal.update_header(cwd=str(tmp_path / "elsewhere"))
    fresh = _grow(journal, cache, LiveProjection, _turn(27))
    assert fresh is not live and fresh.rebuilds == 1

    # a journal read again from the start (a new backend's cache)
    again = EntryCache().view(path, LiveProjection)
    assert _dump(again.messages()) == _dump(fresh.messages())
    journal.close()


def test_a_list_handed_out_keeps_its_messages() -> None:
    live = LiveProjection()
    entries = _turn(1)[:-2] + [{"type": "assistant", "turn": 1, "text": "calling"}]
    live.sync(entries)
    before = live.messages()
    snapshot = _dump(before)
    entries.append({"type": "tool_call", "turn": 1, "call_id": "c", "name": "n", "input": {}})
    live.sync(entries)
    assert _dump(before) == snapshot  # the earlier list is what it was
    assert live.messages()[-1].tool_calls[0].id == "c"
    _same(live, entries)


def test_a_rewind_of_turns_in_the_middle_rebuilds() -> None:
    entries = [e for n in range(1, 6) for e in _turn(n)]
    live = LiveProjection()
    live.sync(entries)
    # turn numbers reused after a rewind, then a second rewind: hidden turns
    # are no longer only the tail
    entries.append({"type": "rewind", "before_turn": 4, "seq": 100})
    entries += _turn(4) + _turn(5)
    entries.append({"type": "rewind", "before_turn": 2, "seq": 101})
    for i in range(len(entries) + 1):
        fed = LiveProjection()
        fed.sync(entries[:i])
        fed.sync(entries)
        _same(fed, entries)
    live.sync(entries)
    _same(live, entries)


def _with_undos(rng: random.Random, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ENTRIES with seqs, and an undo after some rewinds (files-only or not)."""
    out: list[dict[str, Any]] = []
    rewinds: list[int] = []
    for seq, e in enumerate(entries, 1):
        out.append({**e, "seq": seq})
        if e["type"] == "rewind":
            rewinds.append(seq)
        if rewinds and rng.random() < 0.1:
            out.append({"type": "rewind_undo", "rewind_seq": rng.choice(rewinds),
                        "files_only": rng.random() < 0.3, "seq": 10_000 + seq})
    return out


def test_live_projection_equals_full_projection_on_grown_journals() -> None:
    rng = random.Random(16)
    for _ in range(200):
        entries = _with_undos(rng, _random_journal(rng, rng.randint(1, 50)))
        live = LiveProjection()
        step = rng.choice([1, 1, 2, 5])
        for cut in range(0, len(entries) + step, step):
            prefix = entries[:cut]
            live.sync(prefix)
            _same(live, prefix)
