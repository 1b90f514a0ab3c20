"""Projection: from a journal to the context an ordinary-chat request sends.

A pure function, so that what a request sends depends on the journal alone:
it drops everything inside directive boundaries, everything before the
latest compaction summary, and every rewound turn; what is left becomes
provider-neutral messages (a ``steer`` entry, guidance given mid-turn, is a
user message where it stands). It reads entries as plain dicts so that it runs
straight off ``json.loads`` lines.

A ``rewind`` entry hides the turns seen before it from ``before_turn`` on;
a later ``rewind_undo`` entry naming its seq (``rewind_seq``, without
``files_only``) cancels it: the rewind counts as not having happened.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tandem.gcpause import cyclic_gc_paused
from tandem.providers.base import ImageRef, Message, ToolCallRef
from tandem.store.entry_view import JournalEntry
from tandem.store.rewinds import RewindLedger

SUMMARY_PREFIX = "Summary of the conversation so far:\n\n"


def visible_turns(entries: Iterable[JournalEntry]) -> tuple[set[int], set[int]]:
    """Return (every turn seen, turns hidden by rewinds no undo cancelled) in ENTRIES."""
    rw = RewindLedger()
    for e in entries:
        kind = e.get("type")
        turn = e.get("turn")
        if kind == "turn_start" and isinstance(turn, int):
            rw.order.append(turn)
        elif kind == "rewind" or kind == "rewind_undo":
            rw.see(e, kind)
    return set(rw.order), rw.hidden()


def directive_turns(entries: Iterable[JournalEntry]) -> set[int]:
    """Turns that lie inside a directive boundary."""
    return {
        e["turn"]
        for e in entries
        if e.get("type") == "directive_open" and isinstance(e.get("turn"), int)
    }


def project(entries: Sequence[JournalEntry]) -> list[Message]:
    """The ordinary-chat context of a session whose journal holds ENTRIES."""
    with cyclic_gc_paused():
        return _project(entries)


def _project(entries: Sequence[JournalEntry]) -> list[Message]:
    # One pass to learn what is excluded and where the context starts ...
    rw = RewindLedger()
    excluded: set[int] = set()
    start = 0
    summary: str | None = None
    kept_from = 0
    for i, e in enumerate(entries):
        kind = e.get("type")
        if kind == "turn_start":
            turn = e.get("turn")
            if isinstance(turn, int):
                rw.order.append(turn)
        elif kind == "directive_open":
            turn = e.get("turn")
            if isinstance(turn, int):
                excluded.add(turn)
        elif kind == "rewind" or kind == "rewind_undo":
            rw.see(e, kind)
        elif kind == "compaction":
            start, summary = i + 1, str(e.get("summary", ""))
            kept_from = first_kept(e)
    excluded |= rw.hidden()
    messages: list[Message] = []
    if summary is not None:
        messages.append(Message(role="user", text=SUMMARY_PREFIX + summary))
        messages.append(Message(role="assistant", text="Understood."))
        # Kept turns precede the compaction entry in the journal.
        body: Sequence[JournalEntry] = [
            e for e in entries[:start] if _turn(e) >= kept_from > 0]
        body = [*body, *entries[start:]]
    else:
        body = entries
    # ... and one pass to build the messages: this loop is the hot part of
    # every chat request, so it is written flat.
    append = messages.append
    for e in body:
        turn = e.get("turn")
        if turn.__class__ is not int or turn in excluded:
            continue
        kind = e.get("type")
        if kind == "user" or kind == "assistant":
            text = e.get("text", "")
            append(msg(kind, text if text.__class__ is str else str(text),
                       images=images_of(e) if "images" in e else None))
        elif kind == "steer":  # guidance mid-turn: a user message where the model saw it
            text = e.get("text", "")
            append(msg("user", text if text.__class__ is str else str(text)))
        elif kind == "tool_call":
            call = tool_call(e)
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant":
                last.tool_calls.append(call)
            else:
                append(msg("assistant", "", [call]))
        elif kind == "tool_result":
            output = e.get("output", "")
            append(msg("tool", output if output.__class__ is str else str(output),
                        call_id=str(e.get("call_id")), is_error=e.get("status") != "completed"))
    # Dangling tool calls (an aborted turn) are paired by the native provider
    # (`complete_tool_pairs`), which knows what its API rejects.
    return messages


def _turn(e: JournalEntry) -> int:
    turn = e.get("turn")
    return turn if isinstance(turn, int) else -1


# Entries were validated when they were read, so messages are built without
# a second validation: pydantic's constructor (and even `model_construct`,
# which resolves every default in Python) was 80 % of the cost of projecting
# a long journal. `test_fast_messages_equal_validated_ones` keeps this honest.
_ALL_SET = set(Message.model_fields)
"""Shared by every message built here: all fields are set, so pydantic's
own ``add`` on assignment never changes it."""
_new = object.__new__
_set = object.__setattr__


def msg(role: str, text: str = "", tool_calls: list[ToolCallRef] | None = None,
        call_id: str | None = None, is_error: bool = False,
        images: list[ImageRef] | None = None) -> Message:
    """A `Message` built without validation, from fields the journal reader already checked."""
    m = _new(Message)
    _set(m, "__dict__", {"role": role, "text": text,
                         "tool_calls": [] if tool_calls is None else tool_calls,
                         "call_id": call_id, "name": None, "is_error": is_error,
                         "images": [] if images is None else images})
    _set(m, "__pydantic_fields_set__", _ALL_SET)
    _set(m, "__pydantic_extra__", None)
    _set(m, "__pydantic_private__", None)
    return m


def images_of(e: JournalEntry) -> list[ImageRef]:
    """The images a ``user`` entry E names (by digest; their bytes are the store's).

    A hand-edited record that is not an image's is skipped, not an error."""
    out: list[ImageRef] = []
    given = e.get("images")
    for item in given if isinstance(given, list) else []:
        if not isinstance(item, dict):
            continue
        try:  # the record's own four keys only: bytes come from the store, never the journal
            out.append(ImageRef.model_validate(
                {k: item.get(k) for k in ("digest", "media_type", "size", "name")}))
        except ValueError:
            continue
    return out


def tool_call(e: JournalEntry) -> ToolCallRef:
    """The tool call a ``tool_call`` entry E records (an input that is no object: none)."""
    given = e.get("input")
    return ToolCallRef(id=str(e.get("call_id")), name=str(e.get("name", "")),
                       input=dict(given) if isinstance(given, dict) else {})


def first_kept(e: JournalEntry) -> int:
    """The first kept turn a ``compaction`` entry E names (0: none kept)."""
    value = e.get("first_kept_turn")
    return int(value) if isinstance(value, int | float | str) and value else 0
