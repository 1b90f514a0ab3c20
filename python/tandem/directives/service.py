"""The workspace service: directive records of every workspace this backend touches.

Everything durable goes through `WorkspaceLog`; every read folds the log
afresh (plus the bound journals' rewinds), so two backends sharing a
``TANDEM_HOME`` never disagree for long. The first touch of a workspace in a
process runs `repair`: a directive turn whose journal shows its boundary
closed but whose attempt (or discussion turn) the record lacks — a crash
between the two — is recorded from the journal.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from tandem.checkpoints.service import CheckpointService
from tandem.directives import journals
from tandem.directives.journals import DirectiveTurn
from tandem.directives.log import Items, Registry, WorkspaceLog, canonical_root
from tandem.directives.models import (
    DISCUSSION_ACTIONS,
    MAX_REQUEST,
    Attempt,
    DirectiveState,
    Discussion,
    Event,
)
from tandem.directives.state import (
    ID_RE,
    Hidden,
    bound_sessions,
    fold,
    next_directive_id,
    recorded_turns,
)
from tandem.gcpause import cyclic_gc_paused
from tandem.lru import LRU
from tandem.mentions.sources import fence, relative_path
from tandem.protocol.base import TandemError
from tandem.protocol.directives import Anchor, Reference
from tandem.sessions.service import SessionService
from tandem.store.jsonl import read_header
from tandem.store.layout import lock_path
from tandem.store.lock import is_locked
from tandem.turns.service import TurnService

log = logging.getLogger("tandem.directives")


FOLDED_LIMIT = 64
"""Workspaces whose folded directive state is kept."""


@dataclass
class Workspace:
    """One workspace: its id, canonical root and log."""

    id: str
    root: Path
    log: WorkspaceLog


def check_request(request: str) -> str:
    """REQUEST stripped; refuses an empty or oversized one."""
    if not isinstance(request, str) or not request.strip():
        raise TandemError("invalid", "The directive request is empty: say what to do")
    if len(request) > MAX_REQUEST:
        raise TandemError("invalid", f"The request is too long ({len(request)} characters, "
                          f"at most {MAX_REQUEST})")
    return request.strip()


class WorkspaceService:
    """Directive records, binding and repair for one backend (see the module doc)."""

    def __init__(self, home: Path, sessions: SessionService, turns: TurnService,
                 checkpoints: CheckpointService) -> None:
        self.home = Path(home)
        self.sessions = sessions
        self.turns = turns
        self.checkpoints = checkpoints
        self.registry = Registry(self.home)
        self._repaired: set[str] = set()
        self._folded: LRU[str, tuple[object, dict[str, DirectiveState]]] = LRU(FOLDED_LIMIT)

    # -- workspaces ------------------------------------------------------------

    def open(self, root: str, create: bool = True) -> Workspace:
        """The workspace of project ROOT (registered on first use when CREATE)."""
        canon = canonical_root(root)
        wid = self.registry.ensure(canon) if create else self.registry.lookup(canon)
        if wid is None:
            raise TandemError("not-found", f"{canon} has no directives yet")
        ws = Workspace(wid, Path(canon), WorkspaceLog(self.home, wid))
        if wid not in self._repaired:
            self._repaired.add(wid)
            try:
                self.repair(ws)
            except Exception:  # a repair problem must not hide the record
                log.exception("repair of workspace %s failed", wid)
        return ws

    def journal_path(self, session: str, root: Path) -> Path | None:
        """The journal file of SESSION, or None when it cannot be found."""
        m = self.sessions.manager
        held = m.journals.get(session)
        if held is not None:
            return held.path if held.path.exists() else None
        try:
            return m.find(session, str(root))
        except TandemError:
            return None

    def hidden(self, ws: Workspace, events: list[Event]) -> dict[str, set[int]]:
        """Turns hidden by rewinds in every session the workspace's records name."""
        sessions: set[str] = set()
        for e in events:
            extra = e.model_extra or {}
            for key in ("attempt", "discussion"):
                rec = extra.get(key)
                if isinstance(rec, dict) and rec.get("session"):
                    sessions.add(str(rec["session"]))
        out: dict[str, set[int]] = {}
        for sid in sessions:
            path = self.journal_path(sid, ws.root)
            if path is not None:
                out[sid] = journals.hidden_turns(self.sessions.index_at(path))
        return out

    def _fold_key(self, ws: Workspace, events: list[Event]) -> tuple[object, Hidden]:
        """What a fold of EVENTS depends on (a cache key), and the hidden turns themselves."""
        hidden = self.hidden(ws, events)
        return (ws.id, len(events), events[-1].seq if events else 0,
                tuple(sorted((sid, tuple(sorted(t))) for sid, t in hidden.items()))), hidden

    def states(self, ws: Workspace) -> dict[str, DirectiveState]:
        """Every directive of WS, folded (shared: callers must not mutate them)."""
        events = ws.log.read()
        key, hidden = self._fold_key(ws, events)
        kept = self._folded.get(ws.id)
        if kept is None or kept[0] != key:
            with cyclic_gc_paused():  # thousands of acyclic models: no collection mid-way
                kept = (key, fold(events, hidden))
            self._folded[ws.id] = kept
        return kept[1]

    def get(self, ws: Workspace, directive: str) -> DirectiveState:
        """Directive DIRECTIVE of WS; a clear error when there is none."""
        if not isinstance(directive, str) or not ID_RE.match(directive):
            raise TandemError("invalid", f"Not a directive id (D1, D2…): {directive!r}")
        state = self._one(ws, directive)
        if state is None:
            raise TandemError("not-found", f"No directive {directive} in {ws.root}")
        return state

    def mention_text(self, root: Path, directive: str) -> str:
        """DIRECTIVE of the project at ROOT as an ``@D3`` mention attaches it: its
        request and its anchor's recorded text; ``not-found`` when there is none."""
        try:
            ws = self.open(str(root), create=False)
        except TandemError:
            raise TandemError("not-found", f"@{directive}: no directive {directive} in "
                                           f"{root}; nothing was sent") from None
        try:
            state = self.get(ws, directive)
        except TandemError as e:
            raise TandemError(e.code, f"@{directive}: {e.message}; nothing was sent") from None
        a = state.anchor
        return (f"Request:\n{state.request.strip()}\n\n"
                f"Anchor: {a.path}, lines {a.start_line}-{a.end_line}\n{fence(a.text)}")

    def _one(self, ws: Workspace, directive: str) -> DirectiveState | None:
        """DIRECTIVE of WS: from the folded states when they are current, else folded alone.

        A cold ``directives/get`` then folds one directive's events, not the log's.
        """
        events = ws.log.read()
        kept = self._folded.get(ws.id)
        if kept is not None and kept[0] == self._fold_key(ws, events)[0]:
            return kept[1].get(directive)
        mine = [e for e in events if e.directive == directive]
        with cyclic_gc_paused():
            return fold(mine, self.hidden(ws, mine)).get(directive)

    # -- changes ---------------------------------------------------------------

    def create(self, ws: Workspace, path: str, start_line: int, end_line: int, text: str,
               request: str, references: list[Reference] | None = None) -> DirectiveState:
        """Create a directive anchored at PATH lines START_LINE..END_LINE; return it."""
        request = check_request(request)
        try:
            rel = relative_path(ws.root, path)
            anchor = Anchor(path=rel, start_line=start_line, end_line=end_line, text=text)
        except ValueError as exc:
            raise TandemError("invalid", f"Bad anchor: {exc}") from None
        refs = [self._ref(ws, r) for r in references or []]
        created: list[str] = []

        def compute(events: list[Event]) -> Items:
            created.append(next_directive_id(events))
            return [("directive_created", {
                "directive": created[0], "request": request,
                "anchor": anchor.model_dump(), "references": [r.model_dump() for r in refs]})]

        ws.log.append_many([], compute)
        return self.get(ws, created[0])

    def _ref(self, ws: Workspace, ref: Reference) -> Reference:
        try:
            return ref.model_copy(update={"path": relative_path(ws.root, ref.path)})
        except ValueError as exc:
            raise TandemError("invalid", f"Bad reference: {exc}") from None

    def edit(self, ws: Workspace, directive: str, request: str | None,
             references: list[Reference] | None) -> DirectiveState:
        """Change the request (back to Ready, earlier activity kept) and/or references."""
        state = self.get(ws, directive)
        items: Items = []
        if request is not None:
            new = check_request(request)
            if new != state.request:
                items.append(("request_edited", {"directive": directive, "request": new}))
        if references is not None:
            refs = [self._ref(ws, r).model_dump() for r in references]
            items.append(("references_set", {"directive": directive, "references": refs}))
        if not items:
            raise TandemError("invalid", "Nothing to change: give a different request or "
                              "references")
        ws.log.append_many(items)
        return self.get(ws, directive)

    def update_anchor(self, ws: Workspace, directive: str, anchor: Anchor) -> DirectiveState:
        """Record where the anchor is now (moved, detached, source-missing or reattached)."""
        self.get(ws, directive)
        try:
            anchor = anchor.model_copy(update={"path": relative_path(ws.root, anchor.path)})
        except ValueError as exc:
            raise TandemError("invalid", f"Bad anchor: {exc}") from None
        ws.log.append("anchor_updated", {"directive": directive, "anchor": anchor.model_dump()})
        return self.get(ws, directive)

    def reattach(self, ws: Workspace, directive: str, start_line: int | None = None,
                 end_line: int | None = None) -> DirectiveState:
        """Reattach a detached or source-missing anchor.

        With lines, attach there (the user chose the region). Without, the
        recorded anchor text must occur exactly once in the file.
        """
        state = self.get(ws, directive)
        a = state.anchor
        path = ws.root / a.path
        try:
            content = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            raise TandemError("not-found", f"{a.path} is still missing; {directive} "
                              "waits for it") from None
        if start_line is not None:
            lines = content.splitlines(keepends=True)
            end = end_line or start_line
            if start_line < 1 or end < start_line or end > max(len(lines), 1):
                raise TandemError("invalid", f"Lines {start_line}-{end} are not in {a.path} "
                                  f"({len(lines)} lines)")
            text = "".join(lines[start_line - 1:end])
            new = a.model_copy(update={"start_line": start_line, "end_line": end, "text": text,
                                       "status": "attached"})
        else:
            count = content.count(a.text) if a.text else 0
            if count != 1:
                raise TandemError("ambiguous" if count > 1 else "not-found",
                                  f"The anchor text of {directive} occurs {count} times in "
                                  f"{a.path}; select the region and reattach it there")
            start = content[:content.index(a.text)].count("\n") + 1
            new = a.model_copy(update={"start_line": start,
                                       "end_line": start + a.text.rstrip("\n").count("\n"),
                                       "status": "attached"})
        return self.update_anchor(ws, directive, new)

    def archive(self, ws: Workspace, directive: str, archived: bool) -> DirectiveState:
        """Archive (hide, never delete) or unarchive DIRECTIVE."""
        self.get(ws, directive)
        ws.log.append("archived", {"directive": directive, "archived": archived})
        return self.get(ws, directive)

    # -- binding ---------------------------------------------------------------

    def check_available(self, session: str, root: Path) -> None:
        """Refuse when bound SESSION's journal is missing or unreadable."""
        path = self.journal_path(session, root)
        reason = "its journal is missing"
        if path is not None:
            try:
                read_header(path)
                return
            except TandemError as exc:
                reason = f"its journal is unreadable ({exc.message})"
        raise TandemError("unavailable", f"The directive's session {session} is unavailable: "
                          f"{reason}. Rebind the directive to move its future activity to "
                          "another session", command="tandem-directive-rebind")

    def rebind_warning(self, state: DirectiveState, session: str) -> str:
        """What the user must read before a rebind."""
        old = state.session or "none"
        return (f"Rebinding {state.id} from session {old} to {session}: future requests run "
                f"in {session}. Earlier attempts keep pointing at their old session and turn; "
                "Rewind and View changes of those attempts still go to the old session.")

    def bind(self, ws: Workspace, directive: str, session: str, rebind: bool = False) -> None:
        """Record that DIRECTIVE's future requests run in SESSION."""
        ws.log.append("bound", {"directive": directive, "session": session, "rebind": rebind})

    # -- recording and repair ------------------------------------------------------

    def record(self, ws: Workspace, directive: str, rec: Attempt | Discussion) -> bool:
        """Append REC unless its (session, turn) is already recorded; True when written."""
        kind = "attempt_recorded" if isinstance(rec, Attempt) else "discussion_recorded"
        key = "attempt" if isinstance(rec, Attempt) else "discussion"

        def compute(events: list[Event]) -> Items:
            if (rec.session, rec.turn) in recorded_turns(events):
                return []
            body = rec.model_dump()
            if isinstance(rec, Discussion):  # numbered under the lock, in log order
                body["seq"] = 1 + max((_seq_of(e, key) for e in events
                                       if e.kind == kind and e.directive == directive),
                                      default=0)
            return [(kind, {"directive": directive, key: body})]

        return bool(ws.log.append_many([], compute))

    def repair(self, ws: Workspace) -> list[tuple[str, int]]:
        """Record directive turns whose boundary closed but whose record is missing."""
        events = ws.log.read()
        sessions = bound_sessions(events)
        if not sessions:
            return []
        engine = self.turns.engine
        states: dict[str, DirectiveState] | None = None  # folded only when a turn needs it
        done = recorded_turns(events)
        fixed: list[tuple[str, int]] = []
        for sid in sorted(sessions):
            path = self.journal_path(sid, ws.root)
            if path is None or sid in engine.running:
                continue
            recorded = {turn for s, turn in done if s == sid}
            found = journals.directive_turns(self.sessions.index_at(path), ws.id, recorded)
            if any(not t.get("ended") for t in found):
                try:  # close turns a crash left open (aborted), then record them
                    engine.repair(self.sessions.journal(sid))
                except TandemError as exc:
                    log.warning("cannot close open turns of %s: %s", sid, exc.message)
                found = journals.directive_turns(self.sessions.index_at(path), ws.id, recorded)
            todo = [t for t in found if t["closed"] and (sid, t["turn"]) not in done]
            if todo and states is None:
                with cyclic_gc_paused():
                    states = fold(events)
            folded = states or {}
            todo = [t for t in todo if str(t["directive"]) in folded]
            if todo and sid not in self.sessions.manager.journals and is_locked(lock_path(path)):
                continue  # another live backend owns this session: it records its own turns
            for t in todo:
                state = folded[str(t["directive"])]
                if self.record(ws, state.id, repaired_record(state, sid, t)):
                    fixed.append((sid, t["turn"]))
        if fixed:
            log.info("workspace %s: recorded %d directive turn(s) from journals", ws.id,
                     len(fixed))
        return fixed


def _seq_of(event: Event, key: str) -> int:
    rec = (event.model_extra or {}).get(key)
    seq = rec.get("seq") if isinstance(rec, dict) else None
    return seq if isinstance(seq, int) else 0


def repaired_record(state: DirectiveState, session: str, t: DirectiveTurn
                    ) -> Attempt | Discussion:
    """An attempt or discussion turn rebuilt from journal turn T of SESSION."""
    outcome = t.get("outcome") if t.get("outcome") in ("succeeded", "failed", "aborted") \
        else "aborted"
    action = str(t.get("action") or "implement")
    # Read from a journal: validated as the record is built.
    common: dict[str, object] = {
        "action": action, "request": state.request,
        "prompt": t.get("prompt", ""), "answer": t.get("answer", ""),
        "error": t.get("error"), "outcome": outcome, "session": session, "turn": t["turn"],
        "provider": t.get("provider") or "", "repaired": True}
    attempt = t.get("attempt") if isinstance(t.get("attempt"), int) else None
    if action in DISCUSSION_ACTIONS:
        return Discussion.model_validate({"seq": state.next_discussion, "attempt": attempt,
                                          **common})
    patch = t.get("patch") if isinstance(t.get("patch"), dict) else None
    return Attempt.model_validate({"seq": attempt or state.next_attempt, "patch": patch,
                                   "completeness": t.get("completeness"),
                                   "checkpoint": t.get("checkpoint"), **common})

