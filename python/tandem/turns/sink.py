"""The turn engine's `TurnSink`: provider reports become journal entries and events.

Text and reasoning deltas stream to Emacs as ``delta`` events and are kept
in memory until the message ends; then one ``reasoning`` and one
``assistant`` entry are written. Guidance the user gives the running turn
(``turns/steer``) waits here until the agent loop's next model request takes
it (`JournalSink.take_steers`), or, for an engine whose server takes it later
(the remote engine), until that engine reports it taken (`hand_steers`, then
`steer_taken`). Every entry written is also published as an
``entry`` event, so the view and the journal never disagree.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable

from tandem.config.rules import proposal
from tandem.events import EventSink
from tandem.protocol.base import TandemError
from tandem.protocol.events import EntryEvent, InteractionEvent
from tandem.protocol.events import delta as delta_event
from tandem.providers.base import PermissionAnswer, PermissionReply, PermissionRequest, ToolKind
from tandem.store.journal import Journal
from tandem.store.jsonl import now_iso
from tandem.store.models import entry_to_dict

ANSWERS: tuple[PermissionAnswer, ...] = ("allow_once", "allow_session", "reject")
OPTIONS = [
    {"id": "allow_once", "label": "Allow once", "key": "y"},
    {"id": "allow_session", "label": "Allow for this session", "key": "a"},
    {"id": "reject", "label": "Reject", "key": "n"},
]

ONCE_ONLY = [o for o in OPTIONS if o["id"] != "allow_session"]
"""The answers of a question about one protected write: never for the whole session."""

Asker = Callable[[PermissionRequest, str], Awaitable[PermissionAnswer]]
"""How a headless turn asks (a terminal prompt); None means ask Emacs."""


class JournalSink:
    """Writes one turn's reports to its journal and publishes them."""

    def __init__(self, journal: Journal, events: EventSink, turn: int,
                 asker: Asker | None = None) -> None:
        self.journal = journal
        self.events = events
        self.turn = turn
        self.asker = asker
        self.session = journal.id
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._ids = itertools.count(1)
        self.pending: dict[str, asyncio.Future[PermissionReply]] = {}
        """Interactions waiting for the user, by interaction id."""
        self.asked: dict[str, PermissionRequest] = {}
        """The request of each pending interaction, to check what its answer carries."""
        self.final_text: list[str] = []
        """Every assistant message of the turn, for the directive frame."""
        self.write_error: str | None = None
        """The first journal write this turn that the disk refused, as a sentence."""
        self.steers: list[tuple[str, str]] = []
        """Guidance given (``turns/steer``) that no model request took yet: (text, when)."""
        self.steers_handed: list[tuple[str, str]] = []
        """Guidance handed to the engine (`hand_steers`) that it has not seen taken yet."""

    def write(self, entry: dict[str, object]) -> dict[str, object]:
        """Append ENTRY (for this turn) to the journal and publish it.

        A refused write (disk full) raises; the first such error is kept in
        ``write_error`` so the terminal path can say why the turn failed.
        """
        entry.setdefault("turn", self.turn)
        try:
            appended = self.journal.append(entry)
        except TandemError as e:
            if e.code == "io" and self.write_error is None:
                self.write_error = e.message
            raise
        written = entry_to_dict(appended)
        self.events.publish(self.session, EntryEvent(entry=written))
        return written

    # -- TurnSink ----------------------------------------------------------

    def text(self, delta: str) -> None:
        """Stream assistant text."""
        if delta:
            self._text.append(delta)
            self.events.publish(self.session, delta_event(self.turn, "text", delta))

    def reasoning(self, delta: str) -> None:
        """Stream reasoning."""
        if delta:
            self._reasoning.append(delta)
            self.events.publish(self.session, delta_event(self.turn, "reasoning", delta))

    def end_message(self) -> None:
        """Write the message streamed so far as complete entries."""
        if self._reasoning:
            self.write({"type": "reasoning", "text": "".join(self._reasoning)})
            self._reasoning.clear()
        if self._text:
            text = "".join(self._text)
            self.write({"type": "assistant", "text": text})
            self.final_text.append(text)
            self._text.clear()

    def tool_call(self, call_id: str, name: str, kind: ToolKind, title: str,
                  input: dict[str, object], decided_by: str | None = None) -> None:
        """Record the model's tool call (after any text streamed before it).

        DECIDED_BY names the user's permission rule that decided the call, if one did.
        """
        self.end_message()
        entry: dict[str, object] = {"type": "tool_call", "call_id": call_id, "name": name,
                                 "kind": kind, "title": title, "input": input}
        if decided_by is not None:
            entry["decided_by"] = decided_by
        self.write(entry)

    def tool_result(self, call_id: str, status: str, output: str) -> None:
        """Record what a tool returned."""
        self.write({"type": "tool_result", "call_id": call_id, "status": status,
                    "output": output})

    def steer(self, text: str) -> int:
        """Keep TEXT for the turn's next model request; how many now wait."""
        self.steers.append((text, now_iso()))
        return len(self.steers_pending())

    def steers_pending(self) -> list[tuple[str, str]]:
        """Every steer given and not yet taken, oldest first: (text, when)."""
        return self.steers_handed + self.steers

    def hand_steers(self) -> list[str]:
        """The guidance waiting, handed to an engine that says later when it was taken.

        Nothing is written yet: `steer_taken` writes each ``steer`` entry once
        the engine sees the model's side take it. One never reported taken stays
        pending, and a turn that ends first queues it as any steer left.
        """
        handed, self.steers = self.steers, []
        self.steers_handed.extend(handed)
        return [text for text, _given in handed]

    def steer_taken(self, text: str) -> bool:
        """Write the ``steer`` entry of the handed guidance TEXT; False if none is TEXT."""
        for i, (handed, given) in enumerate(self.steers_handed):
            if handed == text:
                del self.steers_handed[i]
                self.end_message()
                self.write({"type": "steer", "text": text, "given": given})
                return True
        return False

    def take_steers(self) -> list[str]:
        """The guidance waiting for this request, each written now as a ``steer`` entry.

        The agent loop calls this just before each model request: the entry
        lands where the model sees the guidance, after the step's tool results.
        """
        taken, self.steers = self.steers, []
        if taken:
            self.end_message()
        for text, given in taken:
            self.write({"type": "steer", "text": text, "given": given})
        return [text for text, _given in taken]

    def plan(self, entries: list[dict[str, object]]) -> None:
        """Record an agent's plan."""
        self.write({"type": "plan", "entries": entries})

    async def ask_permission(self, request: PermissionRequest) -> PermissionAnswer:
        """Ask the user about a tool call and wait for the answer."""
        self.end_message()
        interaction = f"{self.turn}.{next(self._ids)}"
        options = ONCE_ONLY if request.once_only else OPTIONS
        asked: dict[str, object] = {
            "type": "interaction", "interaction_id": interaction, "kind": "permission",
            "call_id": request.call_id, "title": request.title, "tool": request.tool,
            "tool_kind": request.kind, "options": options}
        if request.editable:
            asked["editable"] = True  # the view offers to edit the change before it lands
        pattern = None if request.once_only else proposal(request.tool, request.input)
        if pattern is not None:
            asked["rule_pattern"] = pattern  # what an "always" answer proposes to keep
        self.write(asked)
        if self.asker is not None:
            reply = PermissionReply(answer=await self.asker(request, interaction))
        else:
            future: asyncio.Future[PermissionReply] = (
                asyncio.get_running_loop().create_future())
            self.pending[interaction] = future
            self.asked[interaction] = request
            self.events.publish(self.session, InteractionEvent(
                turn=self.turn, interaction_id=interaction, title=request.title,
                tool=request.tool, options=options))
            try:
                reply = await future
            finally:
                self.pending.pop(interaction, None)
                self.asked.pop(interaction, None)
        answer = reply.answer
        if request.once_only and answer == "allow_session":
            answer = "allow_once"  # not offered: an allow counts for this write only
        entry: dict[str, object] = {"type": "interaction_answer", "interaction_id": interaction,
                                 "answer": answer}
        if reply.content is not None:
            entry["edited"] = True  # the user's content is written, not the model's
        if reply.reason is not None:
            entry["reason"] = reply.reason
        self.write(entry)
        if reply.content is not None or reply.reason is not None:
            request.reply = reply
        return answer

    def answer(self, interaction: str, reply: PermissionReply) -> bool:
        """Resolve a pending interaction; False when it is not pending.

        An edited change (REPLY's content) is refused, with a sentence saying
        why, unless the question offered editing: a native write or edit of a
        path that is not protected.
        """
        future = self.pending.get(interaction)
        if future is None or future.done():
            return False
        request = self.asked.get(interaction)
        if reply.content is not None and (request is None or not request.editable):
            tool = request.tool if request is not None else "this tool"
            why = ("a write to a protected path is allowed or rejected as the model "
                   "proposed it" if request is not None and request.once_only
                   else f"only a write_file or edit_file question takes one, not {tool}")
            raise TandemError("invalid", f"Cannot answer {interaction} with an edited "
                              f"change: {why}")
        future.set_result(reply)
        return True
