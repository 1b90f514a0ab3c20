"""Projection benchmark: a 10k-turn journal with 500 directive spans.

Prints JSON lines ``{"bench", "value", "unit", "anchor", "anchor_value", "target"}``;
every figure is a median over several runs, beside its anchor measured in the
same run on the same data. The journal is real: written through
`tandem.store.journal.Journal` to a temp dir, 10,000 turns (500 of them
directive spans with their boundary entries, tool calls in every fifth turn,
one rewind), so the file-level figures include reading and parsing it.

Figures:
* ``projection_10k_turns`` -- `project` on the parsed entries (the pure
  function the engine calls per chat request); target 50 ms.
  Anchor ``naive_filter_dicts``: one pass that drops directive and rewound
  turns from the same dicts without building messages.
* ``projection_10k_turns_compacted`` -- the same after a compaction entry
  near the end (the projection then starts from the summary).
* ``projection_10k_turns_from_file`` -- read the journal with ``json.loads``
  per line, then `project`. Anchor ``naive_json_parse_all_and_filter``:
  ``json.loads`` of every line plus that naive filter.
* ``compaction_check_10k_turns_cold`` -- the first `maybe_compact` check
  after a backend start: read the whole journal (``journal_dicts``), then
  tail, project, estimate; anchor the same naive file pass. No target: it
  is bound by ``json.loads`` of 10 MB, once per session and process.
* ``compaction_check_10k_turns_cached`` -- what `maybe_compact` really does:
  `EntryCache` (the journal was read once before, one turn was appended
  since), `projected_tail`, `project`, estimate; on the compacted journal.
  Target 50 ms.
* ``projection_10k_turns_compacted_tail`` -- `project(projected_tail(...))`
  on the compacted entries: the projection that reads only from the kept
  turns on (same result, checked by tests); a proposal for the engine.
* ``projection_10k_turns_via_models`` -- ``Journal.entries()`` (pydantic
  models) + ``model_dump`` + `project`; anchor the same naive file pass. No
  target: it shows the cost of the model layer (only rewind recovery still
  reads a journal that way).
* ``projection_10k_turns_via_journal_cold`` -- what a fresh backend's first
  chat send does: a new `EntryCache` reads and parses the journal, its
  `LiveProjection` projects it, plus the token estimate. Target: at or
  below the anchor ``naive_json_parse_all_and_filter`` (the ``target``
  printed is that anchor's value).
* ``projection_10k_turns_per_send`` -- what every later send does: one turn
  appended, then the cache parses the new lines and the `LiveProjection`
  takes them in (messages and estimate). Target 5 ms; anchor
  ``naive_filter_dicts`` (one pass over the whole session's dicts).

Run: ``.venv/bin/python bench/bench_projection.py``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from benchlib import emit, median_ms  # noqa: E402
from tandem.sessions.compaction import estimate_tokens, projected_tail  # noqa: E402
from tandem.sessions.live_projection import LiveProjection  # noqa: E402
from tandem.sessions.projection import project  # noqa: E402
from tandem.store.entry_cache import EntryCache, journal_dicts  # noqa: E402
from tandem.store.journal import Journal  # noqa: E402
from tandem.store.models import entry_to_dict  # noqa: E402

TURNS = 10_000
DIRECTIVES = 500
TARGET_MS = 50.0
SEND_TARGET_MS = 5.0


def turn_entries(n: int, directive: bool) -> list[dict[str, Any]]:
    """The entries of turn N: a chat turn, or a directive span."""
    out: list[dict[str, Any]] = [{"type": "turn_start", "turn": n,
                                  "origin": "directive" if directive else "chat",
                                  "provider": "openai:gpt-4o", "model": "gpt-4o",
                                  "checkpoint": f"cp{n}", "permission_mode": "ask"}]
    if directive:
        out.append({"type": "directive_open", "turn": n, "workspace": "w1",
                    "directive": f"D{n}", "action": "implement", "attempt": 1})
    out.append({"type": "user", "turn": n, "text": f"request {n}: " + "please change it " * 8})
    if n % 5 == 0:
        out.append({"type": "tool_call", "turn": n, "call_id": f"c{n}", "name": "read_file",
                    "kind": "read", "title": "read a.py", "input": {"path": "a.py"}})
        out.append({"type": "tool_result", "turn": n, "call_id": f"c{n}",
                    "status": "completed", "output": "def f():\n    return 1\n" * 10})
    out.append({"type": "assistant", "turn": n, "text": f"answer {n}: " + "done that. " * 20})
    if directive:
        out.append({"type": "directive_close", "turn": n, "directive": f"D{n}",
                    "outcome": "succeeded", "summary": "done"})
    out.append({"type": "turn_end", "turn": n, "outcome": "succeeded", "error": None,
                "usage": {"input_tokens": 100, "output_tokens": 20}, "patch": None,
                "completeness": None})
    return out


def build(home: Path, cwd: Path) -> Journal:
    """Write the benchmark journal; return it (open)."""
    journal = Journal.create(home, str(cwd), title="bench")
    every = TURNS // DIRECTIVES
    for n in range(1, TURNS + 1):
        for e in turn_entries(n, directive=n % every == 0):
            journal.append(e)
        if n == TURNS // 2:
            journal.append({"type": "rewind", "before_turn": n - 10})
    journal.sync()
    return journal


def naive_filter(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The anchor: drop directive and rewound turns, nothing else."""
    hidden: set[int] = set()
    seen: set[int] = set()
    directive: set[int] = set()
    for e in entries:
        kind, turn = e.get("type"), e.get("turn")
        if kind == "turn_start":
            seen.add(turn)  # type: ignore[arg-type]
        elif kind == "directive_open":
            directive.add(turn)  # type: ignore[arg-type]
        elif kind == "rewind":
            hidden.update(t for t in seen if t >= e["before_turn"])
    drop = hidden | directive
    return [e for e in entries if e.get("turn") not in drop]


def read_dicts(path: Path) -> list[dict[str, Any]]:
    """Every entry line of the journal at PATH as a dict (the header skipped)."""
    with open(path, "rb") as f:
        f.readline()
        return [json.loads(line) for line in f]


def main() -> None:
    """Build the journal, then measure each figure beside its anchor."""
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp) / "project"
        cwd.mkdir()
        journal = build(Path(tmp) / "home", cwd)
        path = Path(journal.path)
        entries = read_dicts(path)
        messages = project(entries)
        spans = sum(1 for e in entries if e["type"] == "directive_open")
        print(f"journal: {len(entries)} entries, {spans} directive spans, "
              f"{path.stat().st_size / 1e6:.1f} MB; projection: {len(messages)} messages",
              file=sys.stderr)
        assert spans == DIRECTIVES and not any("D" in (m.text or "")[:1] for m in messages)

        def from_journal() -> list[Any]:
            return project([entry_to_dict(e) for e in journal.entries()])

        emit("projection_10k_turns", median_ms(lambda: project(entries), 9),
             "naive_filter_dicts", median_ms(lambda: naive_filter(entries), 9), TARGET_MS)
        compacted = [*entries[:-40], {"type": "compaction", "seq": 10**9, "summary": "S",
                                      "first_kept_turn": TURNS - 5, "tokens_before": 1,
                                      "tokens_after": 1}, *entries[-40:]]
        emit("projection_10k_turns_compacted", median_ms(lambda: project(compacted), 9),
             "naive_filter_dicts", median_ms(lambda: naive_filter(compacted), 9), TARGET_MS)
        emit("projection_10k_turns_compacted_tail",
             median_ms(lambda: project(projected_tail(compacted)), 9),
             "naive_filter_dicts", median_ms(lambda: naive_filter(compacted), 9), TARGET_MS)
        naive_file = median_ms(lambda: naive_filter(read_dicts(path)), 7)
        emit("projection_10k_turns_from_file", median_ms(lambda: project(read_dicts(path)), 7),
             "naive_json_parse_all_and_filter", naive_file, None)
        emit("compaction_check_10k_turns_cold",
             median_ms(lambda: estimate_tokens(project(projected_tail(journal_dicts(journal)))),
                       7),
             "naive_json_parse_all_and_filter", naive_file, None)
        journal.append({"type": "compaction", "summary": "S", "first_kept_turn": TURNS - 1,
                        "tokens_before": 1, "tokens_after": 1})
        cache = EntryCache()
        cache.entries(path)
        turn = [TURNS]

        def check_cached() -> int:
            turn[0] += 1
            for e in turn_entries(turn[0], directive=False):
                journal.append(e)
            return estimate_tokens(project(projected_tail(cache.entries(path))))

        def append_only() -> None:
            turn[0] += 1
            for e in turn_entries(turn[0], directive=False):
                journal.append(e)

        emit("compaction_check_10k_turns_cached", median_ms(check_cached, 9),
             "naive_json_parse_all_and_filter", naive_file, TARGET_MS)
        print(f"(appending one turn alone: {median_ms(append_only, 9):.2f} ms)", file=sys.stderr)
        emit("projection_10k_turns_via_models", median_ms(from_journal, 5),
             "naive_json_parse_all_and_filter", naive_file, None)
        journal.close()
        per_send(Path(tmp))


def per_send(tmp: Path) -> None:
    """The live projection per chat send, and the cold read through the backend's reader."""
    cwd = tmp / "project2"
    cwd.mkdir()
    journal = build(tmp / "home2", cwd)
    path = Path(journal.path)
    entries = read_dicts(path)
    naive = median_ms(lambda: naive_filter(entries), 9)
    naive_file = median_ms(lambda: naive_filter(read_dicts(path)), 7)

    def cold() -> int:  # a fresh backend's first send: read, parse, project
        live = EntryCache().view(path, LiveProjection)
        return len(live.messages()) + live.tokens("next")

    emit("projection_10k_turns_via_journal_cold", median_ms(cold, 7),
         "naive_json_parse_all_and_filter", naive_file, round(naive_file, 3))
    cache = EntryCache()
    cache.view(path, LiveProjection)
    turn = [TURNS]
    sends: list[float] = []
    for _ in range(15):
        turn[0] += 1
        for e in turn_entries(turn[0], directive=False):
            journal.append(e)
        # what a send reads: the appended lines parsed, the context and its estimate
        sends.append(median_ms(lambda: _send(cache, path), 1))
    live = cache.view(path, LiveProjection)
    assert [m.model_dump() for m in live.messages()] == [
        m.model_dump() for m in project(cache.entries(path))]
    emit("projection_10k_turns_per_send", statistics.median(sends),
         "naive_filter_dicts", naive, SEND_TARGET_MS)
    journal.close()


def _send(cache: EntryCache, path: Path) -> int:
    live = cache.view(path, LiveProjection)
    return len(live.messages()) + live.tokens("next")


if __name__ == "__main__":
    main()
