"""The turn engine: accept a request, run it through a provider, end it one way.

Every turn, chat or directive, native or ACP, goes through `TurnEngine.accept`
and ends in `_finish`, the one terminal path (every turn ends through it,
whatever failed): the final patch from the pre-turn checkpoint, the directive close
entry, the ``turn_end`` entry, an fsync, the terminal hook (a directive's
attempt record) and one ``turn-ended`` event, in that order. A turn found
open when a journal is first touched (the backend died mid-turn) is closed
as aborted by `repair`.

The terminal path cannot be skipped: when the journal refuses a write (disk
full, read-only file system) every later step still runs, the turn ends
``failed`` with the disk's sentence as its error ("disk full: …"), the
session is released, and the next `repair` (the next send, or a status
question) writes the missing close entries once the disk takes them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread

from tandem.checkpoints.hooks import AfterTurn, Checkpoints
from tandem.events import EventSink
from tandem.lru import LRU
from tandem.protocol.base import TandemError, TurnStatus
from tandem.protocol.checkpoints import PatchSummary
from tandem.protocol.events import TurnEndedEvent, TurnStarted
from tandem.providers.base import (
    Conversation,
    ImageRef,
    Message,
    Outcome,
    PermissionAnswer,
    PermissionMode,
    PermissionReply,
    PreparesTurns,
    Provider,
    TurnRequest,
    TurnResult,
    Usage,
)
from tandem.sessions.gate import Hold, SessionGate, writable_root
from tandem.sessions.projection import with_attached
from tandem.sessions.titles import name_untitled
from tandem.store.entry_view import JournalEntry
from tandem.store.images import ImageStore
from tandem.store.journal import Journal
from tandem.store.oserrors import io_error
from tandem.turns.facts import JournalFacts, SessionFacts
from tandem.turns.images import Attachment, with_image_data
from tandem.turns.sink import Asker, JournalSink

log = logging.getLogger("tandem.turns")

CRASH_ERROR = "The backend stopped while this turn was running."
ENDED_LIMIT = 256
"""Ended turns kept in memory (every cache is bounded); a lookup past them reads the journal."""


@dataclass
class DirectiveFrame:
    """What makes a turn a directive request (its boundary entries)."""

    workspace: str
    directive: str
    action: str
    attempt: int | None = None


@dataclass
class TurnSpec:
    """One request to run: what to send, to which provider, under which rules."""

    session: str
    text: str
    """The user entry's text: the chat message, or a directive's exact prompt."""
    provider: str
    model: str = ""
    permission_mode: PermissionMode = "ask"
    system: str = ""
    messages: list[Message] | None = None
    """Context to send; None means the projection plus TEXT (ordinary chat)."""
    directive: DirectiveFrame | None = None
    read_only: bool = False
    attached: str = ""
    """Text the request's mentions attach: sent after TEXT, journaled once beside it."""
    context: list[dict[str, Any]] = field(default_factory=list)
    """What the request carries besides its text (mentions, instruction files), as
    records (kind, path, size, digest): the journal and the view list them."""
    instructions: str = ""
    """Project instructions for the system text (a chat turn; a directive's prompt holds
    its own)."""
    on_terminal: Callable[[TurnEnded], Awaitable[None]] | None = None
    """Runs after the turn's entries are durable, before the terminal event."""
    images: list[Attachment] = field(default_factory=list)
    """Checked images sent with TEXT (`tandem.turns.images`); kept by digest."""
    runner: Provider | None = None
    """Runs the turn instead of the provider named PROVIDER: tandem's own work done as a
    turn (a parallel session's landing), checkpointed before and after like any."""


@dataclass
class TurnEnded:
    """How a turn ended, as the terminal path recorded it."""

    session: str
    turn: int
    outcome: Outcome
    error: str | None
    answer: str
    checkpoint: str | None
    after: AfterTurn
    """The turn's patch (none without a pre-turn checkpoint), or why it could not be taken."""
    usage: Usage = field(default_factory=Usage)
    steers_left: list[str] = field(default_factory=list)
    """Guidance given (``turns/steer``) that no model request took: the turn ended first."""

    @property
    def patch(self) -> PatchSummary | None:
        """The turn's patch summary (None: no checkpoint, or it failed)."""
        return self.after.patch

    @property
    def completeness(self) -> str | None:
        """How complete the turn's patch is (None without one)."""
        return self.after.completeness

    @property
    def files_changed(self) -> list[str]:
        """The paths the turn's patch changed."""
        return self.after.patch.paths() if self.after.patch is not None else []


@dataclass
class Running:
    """A turn in flight."""

    spec: TurnSpec
    turn: int
    sink: JournalSink
    task: asyncio.Task[TurnEnded]
    hold: Hold
    """The session gate's hold, released when the turn has ended."""
    provider_task: asyncio.Task[TurnResult] | None = None
    cancelled: bool = False
    provider: Provider | None = None
    """What runs the turn (whether it takes guidance mid-turn: `TurnEngine.steer`)."""


def _usage(recorded: object) -> Usage:
    """The token counts a ``turn_end`` entry recorded (none when it recorded none it reads)."""
    try:
        return Usage.model_validate(recorded) if isinstance(recorded, dict) else Usage()
    except ValueError:
        return Usage()


class TurnEngine:
    """Runs turns for every open session of one backend."""

    def __init__(self, events: EventSink, journal_of: Callable[[str], Journal],
                 provider_for: Callable[[TurnSpec, Journal], Provider],
                 checkpoints: Checkpoints | None = None,
                 facts: SessionFacts | None = None,
                 gate: SessionGate | None = None,
                 after_end: Iterable[Callable[[TurnEnded], None]] = (),
                 images: ImageStore | None = None) -> None:
        self.events = events
        self.images = images
        """Where the bytes of images sent with requests are kept (None: no images)."""
        self.facts: SessionFacts = facts if facts is not None else JournalFacts()
        """A session's root, entries, index, context and protected paths (the service
        passes its caches; alone, the journal is read)."""
        self.journal_of = journal_of
        self.provider_for = provider_for
        self.checkpoints = checkpoints or Checkpoints()
        self.gate = gate or SessionGate()
        """Who holds each session: a turn holds it from acceptance to its terminal path."""
        self.running: dict[str, Running] = {}
        """The turns in flight (to cancel, answer, wait for); busy is the gate's."""
        self.ended: LRU[tuple[str, int], TurnEnded] = LRU(ENDED_LIMIT)
        """How recent turns ended; an older turn's end is read back from its journal."""
        self._repaired: set[str] = set()
        self._unrecorded: dict[tuple[str, int], str] = {}
        """Turns that ended failed without a durable ``turn_end``, with why."""
        self.after_end: tuple[Callable[[TurnEnded], None], ...] = tuple(after_end)
        """Called with each ended turn once its session is free again (the queue's driver)."""

    # -- accepting ---------------------------------------------------------

    async def accept(self, spec: TurnSpec, asker: Asker | None = None) -> int:
        """Reserve the next turn of SPEC's session, start it and return its number."""
        if not spec.text.strip():
            raise TandemError("invalid", "Nothing to send: the request is empty")
        # Hold the session now: the checkpoint below awaits, and a second
        # request arriving meanwhile must not reserve the same turn.
        hold = self.gate.acquire(spec.session, "turn")
        try:
            return await self._accept(spec, asker, hold)
        finally:
            if not hold.started:  # refused, or ended before it ran: the gate is free
                self.gate.release(hold)

    async def _accept(self, spec: TurnSpec, asker: Asker | None, hold: Hold) -> int:
        journal = self.journal_of(spec.session)
        if not journal.writable:
            raise TandemError("read-only", journal.read_only_reason or "session is read-only")
        self.repair(journal)
        root = writable_root(journal, self.facts.root_of(journal))
        # The context is what precedes this turn: read before its first entry is written.
        context = self.facts.context(journal) if spec.messages is None else spec.messages
        turn = self.facts.index(journal).next_turn()
        # May refuse before anything is written.
        provider = spec.runner if spec.runner is not None else self.provider_for(spec, journal)
        records = await self._keep_images(spec, provider, root)
        protected = self.facts.protected(root)
        # A remote provider opens its socket while the checkpoint syncs the mirror
        # (both round trips to the server); it posts nothing until `run`.
        preparer = provider if isinstance(provider, PreparesTurns) else None
        if preparer is not None:
            preparer.prepare_turn(spec.directive is not None)
        try:
            return await self._accept_checkpointed(spec, asker, hold, journal, root, context,
                                                   turn, provider, records, protected)
        finally:
            if preparer is not None and not hold.started:  # refused, or ended before it ran
                await preparer.abandon_prepared()

    async def _accept_checkpointed(
            self, spec: TurnSpec, asker: Asker | None, hold: Hold, journal: Journal,
            root: Path, context: list[Message], turn: int, provider: Provider,
            records: list[dict[str, Any]], protected: tuple[str, ...]) -> int:
        """`_accept` from the pre-turn checkpoint on."""
        try:
            checkpoint = await self.checkpoints.before(root, spec.session, turn)
        except OSError as e:  # a full or read-only home: one sentence, nothing written
            raise io_error(e, f"cannot take the pre-turn checkpoint of {root}") from None
        # The preceding transcript is complete and durable before the boundary.
        journal.sync()
        if not spec.directive:  # a session is named by its first chat request
            # Here, with nothing unsynced: the header rewrite adds no fsync to the turn.
            name_untitled(journal, spec.text)
        sink = JournalSink(journal, self.events, turn, asker)
        # A failure here (disk full) refuses the request: nothing is open yet.
        sink.write({"type": "turn_start", "origin": "directive" if spec.directive else "chat",
                    "provider": spec.provider, "model": spec.model, "checkpoint": checkpoint,
                    "permission_mode": spec.permission_mode})
        started = False
        try:
            if spec.directive:
                d = spec.directive
                sink.write({"type": "directive_open", "workspace": d.workspace,
                            "directive": d.directive, "action": d.action, "attempt": d.attempt})
            self._announce(spec, turn)
            started = True
            user: dict[str, Any] = {"type": "user", "text": spec.text}
            if records:
                user["images"] = records
            if spec.attached:
                user["attached"] = spec.attached
            if spec.context:
                user["context"] = spec.context
            sink.write(user)
        except Exception as e:  # the turn is open in the journal: it must end, failed
            if not started:
                self._announce(spec, turn)
            await self._finish(spec, turn, sink, TurnResult(outcome="failed", error=_why(e)),
                               checkpoint, root, provider)
            return turn
        messages = context if spec.messages is not None else (
            context + [Message(role="user", text=with_attached(spec.text, spec.attached),
                               images=[ImageRef(**r) for r in records])])
        if self.images is not None and any(m.images for m in messages):
            store = self.images
            messages = await anyio.to_thread.run_sync(lambda: with_image_data(messages, store))
        request = TurnRequest(session_id=spec.session, turn=turn, root=root, model=spec.model,
                              system=spec.system, instructions=spec.instructions,
                              messages=messages,
                              permission_mode=spec.permission_mode,
                              read_only=spec.read_only or spec.permission_mode == "read-only",
                              isolated=spec.directive is not None, protected_paths=protected)
        task = asyncio.create_task(self._run(spec, turn, sink, provider, request, checkpoint,
                                             root))
        hold.started = True  # released by `_run` once the terminal path is done
        self.running[spec.session] = Running(spec, turn, sink, task, hold, provider=provider)
        return turn

    async def check_images(self, spec: TurnSpec) -> None:
        """Refuse SPEC (`TandemError` ``unsupported``, one sentence) when it carries images
        its provider cannot take; nothing is written or sent."""
        if spec.images:
            journal = self.journal_of(spec.session)
            await self._refuse_images(self.provider_for(spec, journal),
                                      self.facts.root_of(journal))

    async def _refuse_images(self, provider: Provider, root: Path) -> None:
        if self.images is None:
            raise TandemError("unsupported", "This backend keeps no images: send the text alone")
        why = await provider.image_refusal(root)
        if why:
            raise TandemError("unsupported", why)

    async def _keep_images(self, spec: TurnSpec, provider: Provider, root: Path
                           ) -> list[dict[str, Any]]:
        """The journal's records of SPEC's images, their bytes now in the store.

        Refused, with nothing written, when the provider cannot take images."""
        if not spec.images:
            return []
        await self._refuse_images(provider, root)
        store = self.images
        assert store is not None  # `_refuse_images` refused without one
        try:
            return await anyio.to_thread.run_sync(
                lambda: [a.record(store.put(a.data)) for a in spec.images])
        except OSError as e:  # a full or read-only home: one sentence, nothing written
            raise io_error(e, "cannot keep the image in the image store") from None

    def _announce(self, spec: TurnSpec, turn: int) -> None:
        self.events.publish(spec.session, TurnStarted(
            turn=turn, origin="directive" if spec.directive else "chat",
            provider=spec.provider, model=spec.model,
            directive=spec.directive.directive if spec.directive else None))

    # -- running -------------------------------------------------------------

    async def _run(self, spec: TurnSpec, turn: int, sink: JournalSink, provider: Provider,
                   request: TurnRequest, checkpoint: str | None, root: Path) -> TurnEnded:
        running = self.running.get(spec.session)
        inner = asyncio.create_task(provider.run(request, sink))
        if running is not None:
            running.provider_task = inner
            if running.cancelled:  # cancelled before the provider started
                inner.cancel()
        try:
            result = await inner
        except asyncio.CancelledError:
            result = TurnResult(outcome="aborted", error="Cancelled by the user.")
        except TandemError as e:
            result = TurnResult(outcome="failed", error=e.message)
        except Exception as e:  # a provider bug must still end the turn
            log.exception("provider %s failed", spec.provider)
            result = TurnResult(outcome="failed", error=f"{type(e).__name__}: {e}")
        if self.running.get(spec.session) is not None and self.running[spec.session].cancelled:
            result.outcome = "aborted"
            result.error = result.error or "Cancelled by the user."
        try:
            ended = await self._finish(spec, turn, sink, result, checkpoint, root, provider)
        finally:
            done = self.running.pop(spec.session, None)
            if done is not None:
                self.gate.release(done.hold)
        # Taken with the pop (nothing awaits between): a steer given until now is kept.
        ended.steers_left = [text for text, _given in sink.steers_pending()]
        sink.steers.clear()
        sink.steers_handed.clear()
        for listener in self.after_end:
            try:
                listener(ended)
            except Exception:  # a listener's bug must not change how the turn ended
                log.exception("after-turn listener of %s/%s failed", spec.session, turn)
        return ended

    async def _finish(self, spec: TurnSpec, turn: int, sink: JournalSink, result: TurnResult,
                      checkpoint: str | None, root: Path, provider: Provider) -> TurnEnded:
        """The one terminal path: every step runs, whatever the journal refuses."""
        failures: list[str] = []

        def record(step: Callable[[], object]) -> None:
            # A refused write must not skip what follows: note it and go on.
            try:
                step()
            except Exception as e:
                if not isinstance(e, TandemError):
                    log.exception("terminal path of %s/%s", spec.session, turn)
                failures.append(_why(e))

        record(sink.end_message)
        conversation = provider.conversation
        # The journal says how the root chat's agent conversation went on
        # (new, resume, load, seeded) each time that changes, e.g. after a
        # backend restart; a directive's conversation is never recorded.
        if conversation is not None and spec.directive is None:
            record(lambda: self._record_conversation(sink, conversation))
        started = result.remote_turn
        if started is not None:  # where a Rewind moves the remote conversation back to
            record(lambda: sink.write({"type": "remote_turn", **started.model_dump()}))
        try:
            after = await self.checkpoints.after(root, checkpoint, result)
        except Exception as e:  # the turn still ends; the gap is said
            log.exception("final patch failed")
            after = AfterTurn(error=str(e))
        answer = "\n\n".join(sink.final_text)
        disk = sink.write_error or (failures[0] if failures else None)
        if disk is not None:  # the journal lost part of this turn: say so first
            result.outcome = "failed"
            result.error = disk if not result.error or disk in result.error else (
                f"{disk} (the turn had also failed: {result.error})")
        if spec.directive:
            record(lambda: sink.write({
                "type": "directive_close", "directive": spec.directive.directive,  # type: ignore[union-attr]
                "outcome": result.outcome, "summary": (result.error or answer)[:500]}))
        usage = result.usage.model_dump()  # as the journal holds it
        record(lambda: sink.write({"type": "turn_end", "outcome": result.outcome,
                                   "error": result.error, "usage": usage,
                                   "patch": after.recorded(),
                                   "completeness": after.completeness}))
        record(sink.journal.sync)
        if failures:
            if disk is None:  # a write failed only now: the turn fails for that reason
                result.outcome, result.error = "failed", failures[0]
            # Not durably closed: the next repair writes the close entries.
            self._unrecorded[(spec.session, turn)] = result.error or failures[0]
            self._repaired.discard(spec.session)
        ended = TurnEnded(spec.session, turn, result.outcome, result.error, answer, checkpoint,
                          after, result.usage)
        self.ended[(spec.session, turn)] = ended
        if spec.on_terminal is not None:
            try:
                await spec.on_terminal(ended)
            except Exception:
                log.exception("terminal hook of turn %s/%s failed", spec.session, turn)
        self.events.publish(spec.session, TurnEndedEvent(
            turn=turn, outcome=result.outcome, error=result.error,
            files_changed=ended.files_changed))
        return ended

    def _record_conversation(self, sink: JournalSink, conversation: Conversation) -> None:
        if (conversation.id, conversation.how) != last_acp_session(
                self.facts.entries(sink.journal)):
            sink.write({"type": "acp_session", "acp_session_id": conversation.id,
                        "how": conversation.how})

    # -- control -------------------------------------------------------------

    def cancel(self, session: str) -> bool:
        """Cancel SESSION's turn in flight; False when none runs."""
        running = self.running.get(session)
        if running is None:
            return False
        running.cancelled = True
        for future in running.sink.pending.values():
            if not future.done():
                future.cancel()
        if running.provider_task is not None:
            running.provider_task.cancel()
        return True

    def steer(self, session: str, text: str) -> tuple[int, int]:
        """Give TEXT to SESSION's running turn for its next model request:
        (the turn, how many steers now wait for it).

        Refused (``not-found``) with no turn running, and (``unsupported``) when
        the turn is a directive request or its provider takes no input mid-turn
        (an ACP agent): the message says to queue it instead.
        A steer the turn ends before taking is in the ended turn's ``steers_left``.
        """
        if not text.strip():
            raise TandemError("invalid", "Nothing to steer with: the guidance is empty")
        running = self.running.get(session)
        if running is None:
            raise TandemError("not-found", f"No turn is running in {session}: "
                                           "send the guidance as a message instead")
        if running.spec.directive is not None:
            raise TandemError("unsupported", f"Turn {running.turn} is a directive request: "
                                             "it takes no guidance; queue it instead")
        if not getattr(running.provider, "accepts_steering", False):
            raise TandemError("unsupported", f"{running.spec.provider} cannot take guidance "
                                             f"while turn {running.turn} runs; queue it "
                                             "instead (it goes when the turn ends)")
        return running.turn, running.sink.steer(text)

    def answer(self, session: str, interaction: str,
               answer: PermissionAnswer | PermissionReply) -> bool:
        """Answer a pending interaction of SESSION's running turn (raises for a bad edit).

        ANSWER is the bare choice or a reply carrying an edited change or a reason.
        """
        running = self.running.get(session)
        reply = answer if isinstance(answer, PermissionReply) else PermissionReply(answer=answer)
        return running is not None and running.sink.answer(interaction, reply)

    async def wait(self, session: str, turn: int) -> TurnEnded:
        """Wait for turn TURN of SESSION to end and return how it ended."""
        running = self.running.get(session)
        if running is not None and running.turn == turn:
            return await asyncio.shield(running.task)
        ended = self.ended.get((session, turn))
        if ended is None:
            ended = self._ended_from_journal(session, turn)
        return ended

    def status(self, session: str, turn: int) -> TurnStatus:
        """The state of TURN in SESSION: running, or how it ended (an interrupted turn
        counts as ended: aborted, or failed with why)."""
        running = self.running.get(session)
        if running is not None and running.turn == turn:
            return TurnStatus(state="running", turn=turn, waiting=bool(running.sink.pending))
        ended = self.ended.get((session, turn)) or self._ended_from_journal(session, turn)
        return TurnStatus(state="ended", turn=turn, outcome=ended.outcome, error=ended.error,
                          files_changed=ended.files_changed)

    def _ended_from_journal(self, session: str, turn: int) -> TurnEnded:
        journal = self.journal_of(session)
        try:
            self.repair(journal)  # a turn a crash or a full disk left open ends here
        except TandemError as err:
            log.warning("cannot repair %s yet: %s", session, err.message)
        rec = self.facts.index(journal).get(turn)
        end = rec.end if rec is not None else None
        if end is not None:
            return TurnEnded(session, turn, end.outcome, end.error, "", None,
                             AfterTurn.read(end.patch), _usage(end.usage))
        # Open in the journal, running nowhere: the repair could not write yet.
        if rec is not None and rec.start is not None:
            why = self._unrecorded.get((session, turn))
            return TurnEnded(session, turn, "failed" if why else "aborted", why or CRASH_ERROR,
                             "", None, AfterTurn())
        raise TandemError("not-found", f"Session {session} has no ended turn {turn}")

    def repair(self, journal: Journal) -> list[int]:
        """Close every turn left open as aborted (a crash) or failed (a refused write).

        Returns their numbers. Raises the journal's ``io`` error while the disk
        still refuses; then the next call tries again.
        """
        if journal.id in self._repaired or journal.id in self.running or not journal.writable:
            return []
        open_turns = {rec.turn: rec.open_directive
                      for rec in self.facts.index(journal).open_turns()}
        for turn, directive in sorted(open_turns.items()):
            why = self._unrecorded.get((journal.id, turn))
            outcome, error = ("failed", why) if why else ("aborted", CRASH_ERROR)
            if directive:
                journal.append({"type": "directive_close", "turn": turn, "directive": directive,
                                "outcome": outcome, "summary": error[:500]})
            journal.append({"type": "turn_end", "turn": turn, "outcome": outcome,
                            "error": error, "usage": None, "patch": None,
                            "completeness": None})
        if open_turns:
            journal.sync()
            log.info("closed %d interrupted turn(s) of %s", len(open_turns), journal.id)
        for turn in open_turns:
            self._unrecorded.pop((journal.id, turn), None)
        self._repaired.add(journal.id)
        return sorted(open_turns)

    async def aclose(self) -> None:
        """Cancel every running turn and wait for each to end through the terminal path."""
        for session in list(self.running):
            self.cancel(session)
        tasks = [r.task for r in self.running.values()]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def _why(e: BaseException) -> str:
    """The user's sentence for E (a `TandemError`'s message as it is)."""
    return e.message if isinstance(e, TandemError) else f"{type(e).__name__}: {e}"


def last_acp_session(entries: Iterable[JournalEntry]) -> tuple[str | None, str | None]:
    """(id, how) of the root chat's last recorded ACP conversation in ENTRIES."""
    last: tuple[str | None, str | None] = (None, None)
    for e in entries:
        if e["type"] == "acp_session":
            last = (e["acp_session_id"], e["how"])
        elif (e["type"] == "rewind" or e["type"] == "rewind_undo") and e.get("acp_reset"):
            # A rewind of ACP chat turns: continue in a fresh seeded session.
            last = (None, None)
    return last


async def run_blocking(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a blocking FN (git, file I/O) off the event loop."""
    return await anyio.to_thread.run_sync(fn, *args)
