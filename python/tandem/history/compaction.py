"""Compaction orchestration: run one compaction, compact before a chat turn, cancel, status.

`CompactionService.compact` runs one compaction to its end (the pure parts
are `tandem.sessions.compaction`); `maybe_compact` is what ``turns/send``
calls before accepting a chat turn: it compacts when the projected context
passes the configured share of the model's context window.

A compaction holds its session in the gate: one at a time, never while a
turn or a rewind holds it, and no turn starts while it runs.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from tandem.events import EventSink
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import CompactReply, StatusReply
from tandem.providers.base import Message, TurnRequest
from tandem.providers.registry import keeps_conversation
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
    session_provider,
    summary_messages,
)
from tandem.sessions.gate import SessionGate, writable_root
from tandem.sessions.projection import project
from tandem.sessions.service import SessionService
from tandem.store.journal import Journal
from tandem.store.models import entry_to_dict
from tandem.turns.engine import TurnSpec
from tandem.turns.service import TurnService

log = logging.getLogger("tandem.compaction")


def _check_unchanged(journal: Journal, seq: int) -> None:
    # The gate keeps turns out; this is the journal's own word on it.
    if journal.last_seq != seq:
        raise TandemError(
            "busy",
            "A turn started while the summary was being written; the "
            "compaction was dropped and the session is unchanged. Try again "
            "when the turn has ended.",
        )


class CompactionService:
    """The backend's compactions (see the module doc)."""

    def __init__(self, events: EventSink, sessions: SessionService, turns: TurnService,
                 gate: SessionGate) -> None:
        self.events = events
        self.sessions = sessions
        self.turns = turns
        self.gate = gate
        self.tasks: dict[str, asyncio.Task[CompactReply]] = {}
        """The compaction in flight per session (to cancel it); busy is the gate's."""

    def is_compacting(self, session: str) -> bool:
        """Whether a compaction of SESSION (its full id) is running."""
        return self.gate.holds(session, "compaction")

    async def compact(self, session: str, provider: str | None = None) -> CompactReply:
        """Compact SESSION now (see `tandem.sessions.compaction`)."""
        journal = self.sessions.journal(session)
        sid = journal.id
        if not journal.writable:
            raise TandemError("read-only", journal.read_only_reason or "session is read-only")
        async with self.gate.hold(sid, "compaction"):
            task = asyncio.ensure_future(self._compact(journal, provider))
            self.tasks[sid] = task
            try:
                return await task
            finally:
                if self.tasks.get(sid) is task:
                    del self.tasks[sid]

    def cancel(self, session: str) -> bool:
        """Cancel SESSION's compaction; False when none runs."""
        task = self.tasks.get(self.sessions.journal(session).id)
        if task is None or task.done():
            return False
        task.cancel()
        return True

    async def _compact(self, journal: Journal, requested: str | None) -> CompactReply:
        try:
            return await self._compact_inner(journal, requested)
        except asyncio.CancelledError:
            raise TandemError("cancelled",
                              "Compaction cancelled; the session is unchanged.") from None

    async def _compact_inner(self, journal: Journal, requested: str | None) -> CompactReply:
        sid = journal.id
        seq = journal.last_seq
        entries = self.sessions.entries(journal)
        root = writable_root(journal, self.sessions.root_of(journal))
        settings = self.sessions.settings(root)
        name, model = session_provider(entries, settings, requested)
        policy = policy_from(settings, name, model)
        first_kept = choose_first_kept(entries, policy)
        spec = TurnSpec(session=sid, text="(compaction)", provider=name, model=model)
        provider = self.turns.provider(spec, journal)
        request = TurnRequest(
            session_id=sid, turn=next_turn(entries), root=root, model=model,
            system=SUMMARY_SYSTEM, messages=summary_messages(entries, first_kept),
            permission_mode="read-only", read_only=True, isolated=True,
            max_tokens=SUMMARY_MAX_TOKENS)
        summary = await run_collecting(provider, request)
        if not summary:
            raise TandemError("provider",
                              f"{name} returned an empty summary; nothing was changed")
        _check_unchanged(journal, seq)
        entry = compaction_entry(summary, first_kept, estimate_tokens(project(entries)), 0)
        entry["tokens_after"] = estimate_tokens(project([*entries, entry]))
        conversation: str | None = None
        if keeps_conversation(name):
            conversation = await self._reseed(journal, spec, root, model, [*entries, entry], seq)
        written = [journal.append(entry)]
        if conversation is not None:
            written.append(journal.append(
                {"type": "acp_session", "acp_session_id": conversation, "how": "seeded"}))
        journal.sync()
        for e in written:
            self.events.publish(sid, "entry", {"entry": entry_to_dict(e)})
        log.info("compacted %s before turn %d: %d → %d tokens", sid, first_kept,
                 entry["tokens_before"], entry["tokens_after"])
        return CompactReply(
            session=sid, seq=written[0].seq, first_kept_turn=first_kept,
            tokens_before=entry["tokens_before"], tokens_after=entry["tokens_after"],
            provider=name, acp_session_id=conversation)

    async def _reseed(self, journal: Journal, spec: TurnSpec, root: Path, model: str,
                      new_entries: list[dict[str, Any]], seq: int) -> str:
        """End the root chat's agent conversation and open one seeded with NEW_ENTRIES'
        projection; return its id.

        Stopping the session's providers ends the old conversation with its
        process; the rebuilt provider is told to start afresh and a read-only
        seed prompt opens the new one. On any failure the provider is pointed
        back at the old conversation, which the journal still names.
        """
        old_id = self.turns.provider(spec, journal).conversation_id
        await self.turns.close_session(journal.id)
        provider = self.turns.provider(spec, journal)
        provider.reset_conversation(None)
        seed = TurnRequest(
            session_id=journal.id, turn=next_turn(new_entries), root=root, model=model,
            messages=[*project(new_entries), Message(role="user", text=SEED_REQUEST)],
            permission_mode="read-only", read_only=True, isolated=False)
        try:
            await run_collecting(provider, seed)
            info = provider.conversation
            if info is None or info.how != "seeded":
                raise TandemError(
                    "provider",
                    f"{spec.provider} did not open a seeded ACP session "
                    f"({info.how if info else 'none'}); nothing was changed")
            _check_unchanged(journal, seq)
        except BaseException:
            provider.reset_conversation(old_id)
            raise
        return info.id

    async def maybe_compact(self, session_id: str, *, provider: str | None = None,
                            text: str = "") -> bool:
        """Compact SESSION_ID first when its projected context (plus TEXT, the request
        about to be sent) passes the compaction threshold of PROVIDER (default: the
        session's). Returns True when it compacted.

        Called by ``turns/send`` before accepting a chat turn. A compaction in
        progress refuses the send (``busy``); a failed automatic compaction is
        logged and the turn goes ahead uncompacted (the model may still fit it).
        """
        if not isinstance(session_id, str) or not session_id:
            raise TandemError("invalid", "maybe_compact needs a session id")
        journal = self.sessions.journal(session_id)
        sid = journal.id
        if self.is_compacting(sid):
            self.gate.check_free(sid, "turn")
        if self.gate.holder(sid) is not None or not journal.writable:
            return False
        entries = self.sessions.entries(journal)
        settings = self.sessions.settings(self.sessions.root_of(journal))
        try:
            name, model = session_provider(entries, settings, provider)
        except TandemError:
            return False  # no provider: the send itself will say so
        policy = policy_from(settings, name, model)
        tokens = estimate_tokens([*project(projected_tail(entries)),
                                  Message(role="user", text=text)])
        if not policy.auto or tokens <= policy.limit:
            return False
        try:
            await self.compact(sid, provider)
        except TandemError as exc:
            log.warning("automatic compaction of %s failed: %s", sid, exc.message)
            return False
        return True

    def status(self, session: str, provider: str | None) -> StatusReply:
        """The projected context size of SESSION against the window and the threshold."""
        journal = self.sessions.journal(session)
        entries = self.sessions.entries(journal)
        settings = self.sessions.settings(self.sessions.root_of(journal))
        tokens = estimate_tokens(project(projected_tail(entries)))
        latest = next((e for e in reversed(entries) if e.get("type") == "compaction"), None)
        latest_info = None if latest is None else {
            k: latest.get(k)
            for k in ("seq", "ts", "first_kept_turn", "tokens_before", "tokens_after")}
        name: str | None = None
        model = ""
        try:
            name, model = session_provider(entries, settings, provider)
        except TandemError:
            pass
        policy = policy_from(settings, name, model) if name else None
        return StatusReply(
            session=journal.id, provider=name, tokens=tokens,
            window=policy.window if policy else None,
            threshold=policy.threshold if policy else None,
            limit=policy.limit if policy else None,
            auto=bool(policy and policy.auto),
            would_compact=bool(policy and policy.auto and tokens > policy.limit),
            compacting=self.is_compacting(journal.id), latest=latest_info)
