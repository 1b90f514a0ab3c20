"""The invariants checked after every recovery (and at the end of a run).

Each check returns the violations it found, as sentences. The reference for
the projection is the project's own pure function (`tandem.sessions.projection.project`
over the journal as written, in the OpenAI wire form the provider sends).
"""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tandem.providers.openai import _extend
from tandem.providers.wire_context import complete_tool_pairs
from tandem.sessions.projection import project
from tandem.store.models import EntryError, parse_entry

from .backend import CallError, Client

if TYPE_CHECKING:
    from .model import Model, Project

TEMP_MARKS = (".tandem-", ".tmp-")
"""Name parts of tandem's temporary files (restore copies, atomic writes)."""


def journal_of(home: Path, sid: str) -> Path | None:
    """SID's journal file under HOME (wherever relocation put it)."""
    found = sorted((home / "sessions").glob(f"*/*_{sid}.jsonl"))
    return found[-1] if found else None


_PARSED: dict[Path, tuple[int, bytes, list[dict[str, Any]], list[str]]] = {}
"""Journals already read: how many bytes of whole lines, their digest, the entries and the
complaints they gave. A journal grows by appends (or is rewritten whole, which the digest
sees), so a check parses only what was appended since the last one."""


def _parse_lines(path: Path, chunk: bytes, first: int,
                 entries: list[dict[str, Any]], bad: list[str]) -> None:
    """Parse the lines of CHUNK (line FIRST onwards) into ENTRIES, complaints into BAD."""
    for n, line in enumerate(chunk.split(b"\n"), start=first):
        try:
            data = json.loads(line)
            parse_entry(dict(data))
        except (ValueError, EntryError) as e:
            bad.append(f"{path.name} line {n} does not parse: {e}")
            continue
        entries.append(data)


def read_journal(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """PATH's entries as written, and a sentence for each line that does not parse."""
    data = path.read_bytes()
    whole = data.rfind(b"\n") + 1  # the bytes of complete lines
    cached = _PARSED.get(path)
    if cached is not None and cached[0] <= whole and (
            hashlib.sha1(data[: cached[0]]).digest() == cached[1]):
        start, entries, bad = cached[0], list(cached[2]), list(cached[3])
    else:  # from the start; the header line is not an entry
        start, entries, bad = min(whole, data.find(b"\n") + 1), [], []
    line = data.count(b"\n", 0, start) + 1
    if whole > start:
        _parse_lines(path, data[start : whole - 1], line, entries, bad)
        line = data.count(b"\n", 0, whole) + 1
    if start > 0 or whole > 0:
        _PARSED[path] = (max(start, whole), hashlib.sha1(data[: max(start, whole)]).digest(),
                         list(entries), list(bad))
    if data[max(start, whole):]:  # a last line without its newline
        _parse_lines(path, data[max(start, whole):], line, entries, bad)
    return entries, bad


def open_turns(home: Path, sid: str) -> list[int]:
    """The turns SID's journal started and has not ended (a crash cut them short)."""
    path = journal_of(home, sid)
    entries = read_journal(path)[0] if path is not None else []
    ends = {e["turn"] for e in entries if e["type"] == "turn_end"}
    return sorted({e["turn"] for e in entries if e["type"] == "turn_start"} - ends)


def journals(home: Path, model: Model, projects: list[Project]) -> list[str]:
    """Every journal parses; no acknowledged entry is missing; every started turn ended."""
    out: list[str] = []
    for p in projects:
        path = journal_of(home, p.sid)
        if path is None:
            out.append(f"session {p.sid} has no journal")
            continue
        entries, bad = read_journal(path)
        out += bad
        by_seq = {e["seq"]: e["type"] for e in entries}
        for seq, typ in sorted(model.acked.get(p.sid, {}).items()):
            if by_seq.get(seq) != typ:
                out.append(f"{p.sid}: acknowledged entry {seq} ({typ}) is "
                           f"{by_seq.get(seq) or 'missing'} in the journal")
        starts = {e["turn"] for e in entries if e["type"] == "turn_start"}
        ends = {e["turn"] for e in entries if e["type"] == "turn_end"}
        if starts - ends:
            out.append(f"{p.sid}: turns {sorted(starts - ends)} started and never ended")
        if model.started.get(p.sid, set()) - starts:
            out.append(f"{p.sid}: turns {sorted(model.started[p.sid] - starts)} were announced "
                       "and have no turn_start entry")
    return out


def listing(client: Client, projects: list[Project]) -> list[str]:
    """Every session is listed."""
    rows = client.call("sessions/list", {"all": True}) or []
    listed = {str(r.get("id")) for r in rows} if isinstance(rows, list) else set()
    return [f"session {p.sid} is not listed" for p in projects if p.sid not in listed]


def temp_files(projects: list[Project]) -> list[str]:
    """No temporary file of tandem's is left in any project."""
    out = []
    for p in projects:
        for f in p.root.rglob("*"):
            if ".git" not in f.relative_to(p.root).parts and any(m in f.name for m in TEMP_MARKS):
                out.append(f"{p.name}: temporary file left: {f.relative_to(p.root)}")
    return out


def private_modes(home: Path) -> list[str]:
    """Everything under TANDEM_HOME's sessions is private (files 0600, folders 0700)."""
    out = []
    for f in [home / "sessions", *(home / "sessions").rglob("*")]:
        mode = stat.S_IMODE(f.lstat().st_mode)
        if f.is_symlink():
            continue
        if mode & 0o077:
            out.append(f"{f.relative_to(home)} has mode {mode:o}")
    return out


STORE_MISS = "STORE_MISS"
"""The mark of a rewind plan that found no checkpoint in a moved session's store."""


def files_match_journal(client: Client, p: Project, armed: bool = False) -> list[str]:
    """The tool files are as the journal says (end of the latest turn, after rewinds/reverts).

    ARMED: a fault is armed in the backend, so the plan's own capture may be
    where it fires (a full disk, an I/O error); the next check looks again.
    """
    visible = client.call("sessions/turns", {"session": p.sid, "last": 1,
                                             "hide_rewound": True})["turns"] or []
    if not visible:
        return []
    try:
        plan = client.call("sessions/rewind-plan", {"session": p.sid, "turn": visible[-1]["turn"]})
    except CallError as e:
        if e.code == "no-checkpoint" and p.moves:
            # The move carried the session's checkpoints (checkpoints/carry.py); the
            # driver counts this apart (`STORE_MISS`): a turn cut short before its
            # checkpoint, and a carry a crash cut (not retried yet), answer the same.
            return [f"{p.name}: {STORE_MISS}: a checkpoint of turn {visible[-1]['turn']} "
                    f"is missing from the store after {p.moves} move(s): {e.message}"]
        if e.code in ("no-checkpoint", "compaction", "not-found"):
            return []  # a turn cut short before its checkpoint, or one compacted away
        if armed and e.code in ("checkpoint-failed", "io"):
            return []
        return [f"{p.sid}: rewind-plan failed: {e.code} {e.message}"]
    if not plan.get("expected_after"):
        return []  # the latest turn recorded no end state (it was cut short)
    bad = [c["path"] for c in plan.get("changed_externally") or []
           if str(c["path"]).startswith("t") and "since turn" in str(c.get("when"))
           and c["path"] not in p.excused]
    return [f"{p.name}: {path} differs from the journal's state after turn "
            f"{visible[-1]['turn']}" for path in bad]


def reference_messages(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The context messages ENTRIES give the next chat turn, in OpenAI wire form."""
    out: list[dict[str, Any]] = []
    _extend(out, complete_tool_pairs(project(entries)))  # type: ignore[arg-type]
    return out


def projection(home: Path, p: Project, turn: int, body: dict[str, Any]) -> list[str]:
    """What the model got for TURN's first request equals the journal's projection."""
    path = journal_of(home, p.sid)
    if path is None:
        return []
    entries, _ = read_journal(path)
    start = next((e["seq"] for e in entries if e["type"] == "turn_start" and e["turn"] == turn),
                 None)
    if start is None:
        return [f"{p.sid}: turn {turn} has no turn_start"]
    want = reference_messages([e for e in entries if e["seq"] < start])
    got = [m for m in body.get("messages", []) if m.get("role") not in ("system", "developer")]
    got = got[:-1]  # the turn's own request
    if got != want:
        pairs = zip(got, want, strict=False)
        first = next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(got), len(want)))
        return [f"{p.sid}: turn {turn}'s request had {len(got)} context messages, the journal's "
                f"projection {len(want)}; first difference at message {first}"]
    return []
