"""Compaction methods for Emacs and the automatic compaction before a chat turn.

``sessions/compact`` runs one compaction to its end (see
`tandem.sessions.compaction`), ``sessions/compact-cancel`` cancels it (the
session stays as it was), ``sessions/compaction-status`` says how full the
context is. `maybe_compact` is what ``turns/send`` calls before accepting a
chat turn: it compacts when the projected context passes the configured share
of the model's context window.

Only one compaction runs per session, never while a turn runs; a turn that
starts while the summary is being written makes the compaction give up
(``busy``) instead of recording a summary that misses it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from tandem.protocol.base import MethodSpec, Params, Reply, TandemError
from tandem.providers.base import Message, TurnRequest
from tandem.providers.registry import parse_provider
from tandem.sessions.compaction import (
    SEED_REQUEST,
    SUMMARY_MAX_TOKENS,
    SUMMARY_SYSTEM,
    choose_first_kept,
    compaction_entry,
    estimate_tokens,
    next_turn,
    policy_from,
    projected_tail,
    run_collecting,
    summary_messages,
)
from tandem.sessions.projection import project, visible_turns
from tandem.store.journal import Journal
from tandem.store.models import entry_to_dict
from tandem.turns.engine import TurnSpec
from tandem.turns.service import TurnService, choose_provider, turns

log = logging.getLogger("tandem.compaction")


@dataclass
class CompactionService:
    """Compactions in flight, one task per session id, and the parsed journals."""

    tasks: dict[str, asyncio.Task[CompactReply]] = field(default_factory=dict)


def compactions(app: Any) -> CompactionService:
    """The `CompactionService` of APP."""
    service: CompactionService = app.service("compaction", lambda _a: CompactionService())
    return service


def is_compacting(app: Any, session: str) -> bool:
    """Whether a compaction of SESSION (its full id) is running."""
    task = compactions(app).tasks.get(session)
    return task is not None and not task.done()


# -- models ----------------------------------------------------------------------


class CompactParams(Params):
    """Compact ``session``; ``provider`` overrides the session's own (e.g. a cheaper model)."""

    session: str = Field(min_length=1)
    provider: str | None = None


class CompactReply(Reply):
    """What a compaction recorded."""

    session: str
    seq: int
    """Seq of the ``compaction`` entry."""
    first_kept_turn: int
    tokens_before: int
    tokens_after: int
    provider: str
    acp_session_id: str | None = None
    """For an ACP root chat: the new, seeded ACP session."""


class SessionOnlyParams(Params):
    """Just ``session``."""

    session: str = Field(min_length=1)


class StatusParams(Params):
    """How full ``session``'s context is for ``provider`` (default: the session's)."""

    session: str = Field(min_length=1)
    provider: str | None = None


class StatusReply(Reply):
    """The projected context against the model's window."""

    session: str
    provider: str | None
    tokens: int
    window: int | None
    threshold: float | None
    limit: int | None
    auto: bool
    would_compact: bool
    compacting: bool
    latest: dict[str, Any] | None
    """The latest ``compaction`` entry (seq, first_kept_turn, token counts), if any."""


# -- the session's provider ---------------------------------------------------------


def session_provider(
    entries: Sequence[Mapping[str, Any]], settings: Mapping[str, Any], requested: str | None
) -> tuple[str, str]:
    """(provider name, model) compaction uses: REQUESTED, else the provider of the
    latest visible chat turn, else the settings' default."""
    if requested:
        parse_provider(requested)
        return requested, ""
    _, hidden = visible_turns(entries)
    for e in reversed(entries):
        if (
            e.get("type") == "turn_start"
            and e.get("origin") == "chat"
            and e.get("turn") not in hidden
            and e.get("provider")
        ):
            name = str(e["provider"])
            try:
                parse_provider(name)
            except TandemError:
                continue
            return name, str(e.get("model") or "")
    return choose_provider(dict(settings), None), ""


# -- compacting ----------------------------------------------------------------------


def _check_idle(service: TurnService, journal: Journal, seq: int) -> None:
    if journal.id in service.engine.running or journal.last_seq != seq:
        raise TandemError(
            "busy",
            "A turn started while the summary was being written; the "
            "compaction was dropped and the session is unchanged. Try again "
            "when the turn has ended.",
        )


async def compact(app: Any, session: str, provider: str | None = None) -> CompactReply:
    """Compact SESSION now (see the module docstring of `tandem.sessions.compaction`)."""
    service = turns(app)
    journal = service.journal(session)
    sid = journal.id
    if not journal.writable:
        raise TandemError("read-only", journal.read_only_reason or "session is read-only")
    if sid in service.engine.running:
        raise TandemError(
            "busy",
            f"A turn is running in session {sid}; compact when it has "
            "ended, or cancel it",
            command="tandem-cancel-turn",
        )
    state = compactions(app)
    if is_compacting(app, sid):
        raise TandemError("busy", f"Session {sid} is already being compacted")
    task = asyncio.ensure_future(_compact(service, journal, provider))
    state.tasks[sid] = task
    try:
        return await task
    finally:
        if state.tasks.get(sid) is task:
            del state.tasks[sid]


async def _compact(service: TurnService, journal: Journal, requested: str | None) -> CompactReply:
    try:
        return await _compact_inner(service, journal, requested)
    except asyncio.CancelledError:
        raise TandemError("cancelled", "Compaction cancelled; the session is unchanged.") from None


async def _compact_inner(
    service: TurnService, journal: Journal, requested: str | None
) -> CompactReply:
    sid = journal.id
    seq = journal.last_seq
    entries = service.entries(journal)
    root = service.root_of(journal)
    if not root.is_dir():
        raise TandemError(
            "not-found",
            f"The session's directory {root} no longer exists; resume it to re-root it first",
        )
    settings = service.settings(root)
    name, model = session_provider(entries, settings, requested)
    policy = policy_from(settings, name, model)
    first_kept = choose_first_kept(entries, policy)
    spec = TurnSpec(session=sid, text="(compaction)", provider=name, model=model)
    provider = service.provider(spec, journal)
    request = TurnRequest(
        session_id=sid,
        turn=next_turn(entries),
        root=root,
        model=model,
        system=SUMMARY_SYSTEM,
        messages=summary_messages(entries, first_kept),
        permission_mode="read-only",
        read_only=True,
        isolated=True,
        max_tokens=SUMMARY_MAX_TOKENS,
    )
    summary = await run_collecting(provider, request)
    if not summary:
        raise TandemError("provider", f"{name} returned an empty summary; nothing was changed")
    _check_idle(service, journal, seq)
    entry = compaction_entry(summary, first_kept, estimate_tokens(project(entries)), 0)
    entry["tokens_after"] = estimate_tokens(project([*entries, entry]))
    acp_id: str | None = None
    if parse_provider(name).family == "acp":
        acp_id = await _switch_acp(service, journal, spec, root, model, [*entries, entry], seq)
    written = [journal.append(entry)]
    if acp_id is not None:
        written.append(
            journal.append({"type": "acp_session", "acp_session_id": acp_id, "how": "seeded"})
        )
    journal.sync()
    for e in written:
        service.app.events.publish(sid, "entry", {"entry": entry_to_dict(e)})
    log.info(
        "compacted %s before turn %d: %d → %d tokens",
        sid,
        first_kept,
        entry["tokens_before"],
        entry["tokens_after"],
    )
    return CompactReply(
        session=sid,
        seq=written[0].seq,
        first_kept_turn=first_kept,
        tokens_before=entry["tokens_before"],
        tokens_after=entry["tokens_after"],
        provider=name,
        acp_session_id=acp_id,
    )


async def _switch_acp(
    service: TurnService,
    journal: Journal,
    spec: TurnSpec,
    root: Path,
    model: str,
    new_entries: list[dict[str, Any]],
    seq: int,
) -> str:
    """Close the root chat's ACP session and open one seeded with NEW_ENTRIES' projection.

    Only public `AcpProvider` methods: stopping the session's providers ends
    the old ACP conversation with its process; the rebuilt provider is told
    to start afresh (`reset_root_session`) and a read-only seed prompt opens
    the new session. On any failure the provider is pointed back at the old
    ACP session, which the journal still names.
    """
    from tandem.providers.acp import AcpProvider  # lazy: pulls in the acp package

    old = service.provider(spec, journal)
    old_id = old.root_session_id if isinstance(old, AcpProvider) else None
    await service.close_session(journal.id)
    provider = service.provider(spec, journal)
    if not isinstance(provider, AcpProvider):
        raise TandemError("invalid", f"{spec.provider} is not an ACP provider")
    provider.reset_root_session(None)
    seed = TurnRequest(
        session_id=journal.id,
        turn=next_turn(new_entries),
        root=root,
        model=model,
        messages=[*project(new_entries), Message(role="user", text=SEED_REQUEST)],
        permission_mode="read-only",
        read_only=True,
        isolated=False,
    )
    try:
        await run_collecting(provider, seed)
        info = provider.last_session
        if info is None or info.how != "seeded":
            raise TandemError(
                "provider",
                f"{spec.provider} did not open a seeded ACP session "
                f"({info.how if info else 'none'}); nothing was changed",
            )
        _check_idle(service, journal, seq)
    except BaseException:
        provider.reset_root_session(old_id)
        raise
    return info.acp_session_id


async def maybe_compact(
    app: Any, session_id: str, *, provider: str | None = None, text: str = ""
) -> bool:
    """Compact SESSION_ID first when its projected context (plus TEXT, the request
    about to be sent) passes the compaction threshold of PROVIDER (default: the
    session's). Returns True when it compacted.

    Called by ``turns/send`` before accepting a chat turn. A compaction in
    progress refuses the send (``busy``); a failed automatic compaction is
    logged and the turn goes ahead uncompacted (the model may still fit it).
    """
    if not isinstance(session_id, str) or not session_id:
        raise TandemError("invalid", "maybe_compact needs a session id")
    service = turns(app)
    journal = service.journal(session_id)
    sid = journal.id
    if is_compacting(app, sid):
        raise TandemError(
            "busy",
            f"Session {sid} is being compacted; send again when it is "
            "done, or cancel the compaction",
            command="tandem-compact-cancel",
        )
    if sid in service.engine.running or not journal.writable:
        return False
    entries = turns(app).entries(journal)
    settings = service.settings(service.root_of(journal))
    try:
        name, model = session_provider(entries, settings, provider)
    except TandemError:
        return False  # no provider: the send itself will say so
    policy = policy_from(settings, name, model)
    tokens = estimate_tokens([*project(projected_tail(entries)), Message(role="user", text=text)])
    if not policy.auto or tokens <= policy.limit:
        return False
    try:
        await compact(app, sid, provider)
    except TandemError as exc:
        log.warning("automatic compaction of %s failed: %s", sid, exc.message)
        return False
    return True


# -- methods ---------------------------------------------------------------------------


async def compact_method(app: Any, p: CompactParams) -> CompactReply:
    """Compact a session now."""
    return await compact(app, p.session, p.provider)


async def cancel_method(app: Any, p: SessionOnlyParams) -> dict[str, bool]:
    """Cancel the compaction of a session; it ends leaving the session unchanged."""
    sid = turns(app).journal(p.session).id
    task = compactions(app).tasks.get(sid)
    if task is None or task.done():
        return {"cancelled": False}
    task.cancel()
    return {"cancelled": True}


async def status_method(app: Any, p: StatusParams) -> StatusReply:
    """The projected context size against the window and the threshold."""
    service = turns(app)
    journal = service.journal(p.session)
    entries = turns(app).entries(journal)
    settings = service.settings(service.root_of(journal))
    tokens = estimate_tokens(project(projected_tail(entries)))
    latest = next((e for e in reversed(entries) if e.get("type") == "compaction"), None)
    latest_info = (
        None
        if latest is None
        else {
            k: latest.get(k)
            for k in ("seq", "ts", "first_kept_turn", "tokens_before", "tokens_after")
        }
    )
    name: str | None = None
    model = ""
    try:
        name, model = session_provider(entries, settings, p.provider)
    except TandemError:
        pass
    policy = policy_from(settings, name, model) if name else None
    return StatusReply(
        session=journal.id,
        provider=name,
        tokens=tokens,
        window=policy.window if policy else None,
        threshold=policy.threshold if policy else None,
        limit=policy.limit if policy else None,
        auto=bool(policy and policy.auto),
        would_compact=bool(policy and policy.auto and tokens > policy.limit),
        compacting=is_compacting(app, journal.id),
        latest=latest_info,
    )


METHODS: list[MethodSpec] = [
    MethodSpec(
        "sessions/compact",
        CompactParams,
        compact_method,
        "Summarise older chat turns into a compaction entry.",
        CompactReply,
    ),
    MethodSpec(
        "sessions/compact-cancel",
        SessionOnlyParams,
        cancel_method,
        "Cancel a running compaction (the session stays unchanged).",
    ),
    MethodSpec(
        "sessions/compaction-status",
        StatusParams,
        status_method,
        "Context size against the model's window and the threshold.",
        StatusReply,
    ),
]
