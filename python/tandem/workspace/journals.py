"""Read what the workspace needs from session journals, without taking their locks.

Rewound turns are derived here at read time from each journal's ``rewind``
entries (nothing in the workspace log is deleted). A journal that is gone
hides nothing: its attempts stay visible in the record, as the inspector
needs them after the session file is lost.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tandem.lru import LRU
from tandem.sessions.projection import visible_turns

CACHE_LIMIT = 32
"""Journals kept parsed for directive bindings (a long one is megabytes)."""
_cache: LRU[Path, tuple[tuple[int, int], list[dict[str, Any]]]] = LRU(CACHE_LIMIT)


def read_entries(path: Path) -> list[dict[str, Any]]:
    """The complete entries of the journal at PATH (header, torn tail and bad lines skipped)."""
    try:
        st = path.stat()
    except OSError:
        return []
    key = (st.st_size, st.st_mtime_ns)
    hit = _cache.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        raw = path.read_bytes()
    except OSError:
        return []
    out: list[dict[str, Any]] = []
    for line in raw.split(b"\n")[1:-1]:  # line 1 is the header; the last piece is a tail
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("type") != "header":
            out.append(data)
    _cache[path] = (key, out)
    return out


def hidden_turns(entries: list[dict[str, Any]]) -> set[int]:
    """Turns a ``rewind`` entry hides."""
    return visible_turns(entries)[1]


def directive_turns(entries: list[dict[str, Any]], workspace: str) -> list[dict[str, Any]]:
    """Each directive turn of WORKSPACE in ENTRIES as one dict.

    Keys: turn, directive, action, attempt, closed (bool), outcome, summary,
    prompt, answer, error, patch, completeness, checkpoint, provider.
    """
    turns: dict[int, dict[str, Any]] = {}
    starts: dict[int, dict[str, Any]] = {}
    for e in entries:
        turn = e.get("turn")
        if not isinstance(turn, int):
            continue
        kind = e.get("type")
        if kind == "turn_start":
            starts[turn] = e
        elif kind == "directive_open" and e.get("workspace") == workspace:
            start = starts.get(turn, {})
            turns[turn] = {"turn": turn, "directive": e.get("directive"),
                           "action": e.get("action"), "attempt": e.get("attempt"),
                           "closed": False, "prompt": "", "answers": [],
                           "checkpoint": start.get("checkpoint"),
                           "provider": start.get("provider", "")}
        elif turn in turns:
            t = turns[turn]
            if kind == "user" and not t["prompt"]:
                t["prompt"] = str(e.get("text", ""))
            elif kind == "assistant":
                t["answers"].append(str(e.get("text", "")))
            elif kind == "directive_close":
                t.update(closed=True, outcome=e.get("outcome"), summary=e.get("summary", ""))
            elif kind == "turn_end":
                t.update(ended=True, error=e.get("error"), patch=e.get("patch"),
                         completeness=e.get("completeness"))
    for t in turns.values():
        t["answer"] = "\n\n".join(t.pop("answers"))
    return [turns[k] for k in sorted(turns)]
