"""The request flow of a directive action: preview, accept as a turn, record at the end.

`act` builds the isolated prompt (never the projection), binds the directive
to its session on the first accepted request, and hands the turn to
`TurnEngine.accept` with the directive frame: the engine reserves the turn,
checkpoints, flushes the preceding transcript, opens the boundary, runs the
provider in isolation (read-only for a discussion) and ends through its one
terminal path, which calls our hook to record the attempt or discussion turn.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from tandem.config.agent_files import Instruction, instructions_text, project_instructions
from tandem.directives.actions import check
from tandem.directives.models import (
    DISCUSSION_ACTIONS,
    Attempt,
    DirectiveState,
    Discussion,
    ExchangeFields,
)
from tandem.directives.prompts import build_prompt
from tandem.directives.service import Workspace, WorkspaceService
from tandem.mentions.sources import resolve_anchor, resolve_reference
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import PatchSummary
from tandem.protocol.directives import MAX_TEXT, SystemDirective
from tandem.providers.base import Message
from tandem.store.layout import canonical_cwd
from tandem.turns.engine import DirectiveFrame, TurnEnded, TurnSpec, run_blocking

log = logging.getLogger("tandem.directives")

DEFAULT_SYSTEM: dict[str, str] = {
    "implement": ("You are a careful coding agent working in the user's project. Carry out the "
                  "directive below: make the change in the files, keep it minimal, and end with "
                  "a short summary of what you changed."),
    "discuss": ("You are a coding assistant discussing a directive with the user. You may read "
                "files but must not change anything. Answer concisely."),
}
MAX_DIFF_RECORD = 400_000


@dataclass
class Prepared:
    """What an action would send: the exact prompt and its context."""

    state: DirectiveState
    action: str
    text: str
    based_on: Attempt | None
    prompt: str
    system: SystemDirective
    messages: list[Message]
    context: list[dict[str, object]] = field(default_factory=list)
    """Records of the instruction files the prompt holds (the journal lists them)."""


def system_for(action: str, given: SystemDirective | None) -> SystemDirective:
    """The system directive of ACTION: the one GIVEN by the front end, else the default."""
    if given is not None and (given.system or given.template or given.name):
        if len(given.template) % 2:
            raise TandemError("invalid", "A directive template must alternate user and "
                              "assistant turns (an even number of strings)")
        return given
    name = "discuss" if action in DISCUSSION_ACTIONS else "implement"
    return SystemDirective(name=name, system=DEFAULT_SYSTEM[name])


def prepare(ws: Workspace, state: DirectiveState, action: str, text: str,
            attempt: int | None, system: SystemDirective | None,
            instructions: Sequence[Instruction] = ()) -> Prepared:
    """Validate ACTION on STATE and build its isolated prompt from disk as it is now.

    INSTRUCTIONS are the project's instruction files (`instructions_of`).
    """
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise TandemError("invalid", f"The text must be a string of at most {MAX_TEXT} characters")
    based = check(state, action, text, attempt)
    anchor = resolve_anchor(ws.root, state.anchor)
    refs = [resolve_reference(ws.root, r) for r in state.references]
    prompt = build_prompt(state, action, text, anchor, refs, based,
                          instructions=instructions_text(instructions))
    sysdir = system_for(action, system)
    messages = [Message(role="user" if i % 2 == 0 else "assistant", text=t)
                for i, t in enumerate(sysdir.template)]
    messages.append(Message(role="user", text=prompt))
    return Prepared(state, action, text, based, prompt, sysdir, messages,
                    [i.record() for i in instructions])


def instructions_of(svc: WorkspaceService, ws: Workspace) -> list[Instruction]:
    """The project instruction files of WS's root, as its settings name and cap them."""
    return project_instructions(
        ws.root, *svc.sessions.resolved(ws.root).settings.instruction_files())


def _diff_text(svc: WorkspaceService, root: str, patch: PatchSummary | None) -> str:
    if patch is None or not patch.from_id:
        return ""
    if patch.remote is not None:
        root = patch.remote.mirror  # a remote session's turn: its checkpoints are of the mirror
    full = svc.checkpoints.for_root(root).diff(patch.from_id, patch.to_id)
    return full.diff[:MAX_DIFF_RECORD]


def _choose_session(svc: WorkspaceService, ws: Workspace, requested: str | None) -> str:
    m = svc.sessions.manager
    if requested:
        return requested
    current = m.current
    if current is not None and canonical_cwd(current.active_cwd) == str(ws.root):
        return current.journal.id
    listed = [r for r in m.list(str(ws.root)) if not r.damaged]
    if listed:
        return listed[0].id
    return m.new(str(ws.root)).journal.id


async def act(svc: WorkspaceService, ws: Workspace, directive: str, action: str, text: str = "",
              attempt: int | None = None, provider: str | None = None, model: str = "",
              session: str | None = None, permission_mode: str | None = None,
              system: SystemDirective | None = None) -> dict[str, object]:
    """Start ACTION on DIRECTIVE as a turn; return its identity (session, turn, attempt)."""
    sessions = svc.sessions
    state = svc.get(ws, directive)
    prep = prepare(ws, state, action, text, attempt, system, instructions_of(svc, ws))
    if state.session:
        svc.check_available(state.session, ws.root)
        sid = state.session
    else:
        sid = _choose_session(svc, ws, session)
    try:
        journal = sessions.journal(sid)
    except TandemError as exc:
        raise TandemError("unavailable", f"Session {sid} is unavailable: {exc.message}") from None
    if canonical_cwd(sessions.root_of(journal)) != str(ws.root):
        raise TandemError("invalid", f"Session {journal.id} works in {sessions.root_of(journal)}, "
                          f"not in this workspace ({ws.root})")
    settings = sessions.settings(ws.root)
    provider_name = sessions.provider_for(settings, provider)
    discussion = action in DISCUSSION_ACTIONS
    mode = "read-only" if discussion else sessions.permission_mode(settings, permission_mode)
    seq = None if discussion else state.next_attempt
    frame_attempt = seq if not discussion else (prep.based_on.seq if prep.based_on else None)

    async def on_terminal(ended: TurnEnded) -> None:
        await record_terminal(svc, ws, prep, ended, provider_name, seq)

    spec = TurnSpec(session=journal.id, text=prep.prompt, provider=provider_name,
                    model=model or "", permission_mode=mode, system=prep.system.system,
                    messages=prep.messages,
                    directive=DirectiveFrame(ws.id, directive, action, frame_attempt),
                    read_only=discussion, context=prep.context, on_terminal=on_terminal)
    turn = await svc.turns.engine.accept(spec)
    if state.session != journal.id:
        svc.bind(ws, directive, journal.id)  # the first accepted request binds
    return {"directive": directive, "action": action, "session": journal.id, "turn": turn,
            "attempt": frame_attempt, "workspace": ws.id}


async def record_terminal(svc: WorkspaceService, ws: Workspace, prep: Prepared,
                          ended: TurnEnded, provider: str, seq: int | None) -> None:
    """The terminal hook: record the attempt or discussion turn with its exact prompt."""
    common: ExchangeFields = {
        "action": prep.action, "request": prep.state.request, "text": prep.text,
        "prompt": prep.prompt, "directive": prep.system, "answer": ended.answer,
        "error": ended.error, "outcome": ended.outcome, "session": ended.session,
        "turn": ended.turn, "provider": provider}
    rec: Attempt | Discussion
    if seq is None:  # `record` numbers it under the log's lock
        rec = Discussion(seq=1, attempt=prep.based_on.seq if prep.based_on else None,
                         **common)
    else:
        try:
            diff = await run_blocking(_diff_text, svc, str(ws.root), ended.patch)
        except Exception as exc:  # the record still gets written; the gap is said
            log.warning("diff of %s/%s failed: %s", ended.session, ended.turn, exc)
            diff = ""
        # The workspace log keeps the patch as the journal does (a JSON object).
        rec = Attempt(seq=seq, patch=ended.after.recorded(), diff=diff,
                      completeness=ended.completeness,
                      checkpoint=ended.checkpoint,
                      based_on=prep.based_on.seq if prep.based_on else None, **common)
    svc.record(ws, prep.state.id, rec)
