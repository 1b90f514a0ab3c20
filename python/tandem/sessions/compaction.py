"""Compaction: replace the oldest part of a session's chat context by a summary.

The summary is written by the session's own provider from the **projection**
(so directive turns and rewound turns never enter it), as an isolated,
read-only request whose reports go to a small collecting sink, never to the
journal. On success exactly one ``compaction`` entry is appended (summary,
first kept turn, token counts) and fsynced; the projection then starts from it
(`tandem.sessions.projection.project`). On failure or cancel nothing is
written: the journal stays byte-identical.

For an ACP root chat the agent's own conversation still holds everything, so
the old ACP session is closed (the agent process is stopped) and a new root
ACP session is opened, seeded with the new projection (summary plus kept
turns); the switch is recorded as an ``acp_session`` entry with how
``seeded``, right after the compaction entry.

Rewind across a compaction is refused (`compaction_blocks_rewind`): the
summary would still tell the model about the turns the rewind discards.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tandem.protocol.base import TandemError
from tandem.providers.base import (
    Message,
    PermissionAnswer,
    PermissionRequest,
    Provider,
    ToolKind,
    TurnRequest,
)
from tandem.providers.registry import parse_provider
from tandem.sessions.choice import choose_provider
from tandem.sessions.projection import directive_turns, project, visible_turns
from tandem.store.entry_view import CompactionEntry, JournalEntry

log = logging.getLogger("tandem.compaction")

DEFAULT_WINDOW = 128_000
"""Context window assumed for a model the table and the settings do not know."""
DEFAULT_THRESHOLD = 0.8
"""Share of the window above which a chat request is compacted first."""
DEFAULT_KEEP_TURNS = 2
"""Newest chat turns kept verbatim after a compaction."""
KEEP_SHARE = 0.25
"""Kept turns may use at most this share of the window (fewer are kept if not)."""
SUMMARY_MAX_TOKENS = 4096
TOOL_TEXT_LIMIT = 2000
"""Characters of one tool input or output kept in the summary transcript."""

CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    # (model-name prefix, window in tokens); the longest matching prefix wins.
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("codex-mini", 200_000),
    ("claude", 200_000),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini", 1_048_576),
    ("deepseek", 128_000),
    ("mistral-large", 131_072),
    ("codestral", 256_000),
    ("llama-3", 131_072),
    ("qwen2.5-coder", 32_768),
    ("qwen3-coder", 262_144),
    # ACP agents, by the agent name of acp:AGENT
    ("codex", 400_000),
)

SUMMARY_SYSTEM = """\
You are summarising the earlier part of a conversation between a user and a \
coding agent, so that the conversation can go on without the full transcript. \
Your summary becomes the agent's only memory of that part. Write it for the \
agent, in Markdown, without any preamble, and include:
- the user's goals, requirements and constraints, and how they changed;
- decisions taken and the reasons given;
- what was changed, per file (paths, functions, classes), and what was only read;
- commands run and what they showed (errors verbatim when they still matter);
- open questions, known problems, and what remains to do;
- the user's latest request and how far it got.
Keep exact identifiers, file paths, error messages and numbers. Do not invent \
anything, do not answer or continue the conversation, and do not call tools. \
Stay under 1500 words."""

SUMMARY_REQUEST = "Summarise the conversation in the transcript above, following your instructions."
SEED_REQUEST = (
    "This conversation was compacted: the messages above are a summary of the earlier "
    "part and the turns kept verbatim. Do nothing else now; reply with the single word "
    "Ready."
)


# -- policy: windows, thresholds, estimates -------------------------------------


@dataclass(frozen=True)
class Policy:
    """When to compact and how much to keep, from the settings."""

    window: int
    threshold: float = DEFAULT_THRESHOLD
    keep_turns: int = DEFAULT_KEEP_TURNS
    auto: bool = True

    @property
    def limit(self) -> int:
        """Estimated context tokens above which a chat request compacts first."""
        return int(self.window * self.threshold)


def context_window(
    provider: str, model: str = "", overrides: Mapping[str, Any] | None = None
) -> int:
    """The context window (tokens) of PROVIDER (``family:target``) running MODEL.

    OVERRIDES (settings ``context_windows``) map a full provider name, a model
    name or a model-name prefix to a window; they win over the built-in table.
    """
    spec = parse_provider(provider)
    name = (model or spec.target).strip().lower()
    for key in (provider, model, spec.target):
        if key and overrides and key in overrides:
            return _window_value(key, overrides[key])
    if overrides:
        for key in sorted(overrides, key=len, reverse=True):
            if name.startswith(str(key).lower()):
                return _window_value(key, overrides[key])
    best = max((p for p, _ in CONTEXT_WINDOWS if name.startswith(p)), key=len, default=None)
    if best is None:
        # a slash-qualified model (openrouter style "anthropic/claude-…")
        tail = name.rsplit("/", 1)[-1]
        best = max((p for p, _ in CONTEXT_WINDOWS if tail.startswith(p)), key=len, default=None)
    return dict(CONTEXT_WINDOWS)[best] if best else DEFAULT_WINDOW


def _window_value(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1024:
        raise TandemError(
            "invalid",
            f"settings context_windows.{key}: expected an integer >= 1024 (tokens), not {value!r}",
        )
    return value


def policy_from(settings: Mapping[str, Any], provider: str, model: str = "") -> Policy:
    """The compaction `Policy` for PROVIDER/MODEL under SETTINGS (bad values: TandemError)."""
    overrides = settings.get("context_windows") or {}
    if not isinstance(overrides, Mapping):
        raise TandemError("invalid", "settings context_windows must be a map of name → tokens")
    threshold = settings.get("compaction_threshold", DEFAULT_THRESHOLD)
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not (0.05 <= float(threshold) <= 1.0)
    ):
        raise TandemError(
            "invalid",
            "settings compaction_threshold: expected a number between "
            f"0.05 and 1 (share of the context window), not {threshold!r}",
        )
    keep = settings.get("compaction_keep_turns", DEFAULT_KEEP_TURNS)
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise TandemError(
            "invalid", f"settings compaction_keep_turns: expected an integer >= 0, not {keep!r}"
        )
    auto = settings.get("auto_compact", True)
    if not isinstance(auto, bool):
        raise TandemError("invalid", f"settings auto_compact: expected true or false, not {auto!r}")
    return Policy(
        window=context_window(provider, model, overrides),
        threshold=float(threshold),
        keep_turns=keep,
        auto=auto,
    )


IMAGE_TOKENS = 1600
"""What one image is counted as: about the most an API charges for one (Anthropic
bounds an image it resizes at ~1,600 tokens)."""


def estimate_tokens(messages: Iterable[Message], system: str = "") -> int:
    """A provider-neutral token estimate of MESSAGES: UTF-8 bytes / 4, plus 4 per message.

    No tokenizer covers every provider; bytes/4 is the usual rule of thumb for
    English and code and errs high, not low, for other scripts.
    """
    size = len(system.encode("utf-8"))
    count = 0
    for m in messages:
        count += 1
        size += len(m.text.encode("utf-8")) + IMAGE_TOKENS * 4 * len(m.images)
        for call in m.tool_calls:
            size += len(call.name) + len(json.dumps(call.input, ensure_ascii=False).encode())
    return math.ceil(size / 4) + 4 * count


# -- choosing what to keep --------------------------------------------------------


def projected_tail(entries: Sequence[JournalEntry]) -> Sequence[JournalEntry]:
    """The part of ENTRIES the projection reads: from the latest compaction's first
    kept turn on (all of ENTRIES when there is no compaction).

    ``project(projected_tail(e)) == project(e)``: turns are reserved in
    increasing order and one at a time, so every entry of a kept turn, every
    directive boundary of one, and every rewind that can hide one follow the
    kept turn's ``turn_start``. Found by scanning backwards, so its cost is
    that of the kept part, not of the whole journal.
    """
    c = len(entries) - 1
    while c >= 0 and entries[c]["type"] != "compaction":
        c -= 1
    if c < 0:
        return entries
    latest = entries[c]
    first_kept = latest.get("first_kept_turn") if latest["type"] == "compaction" else None
    if not isinstance(first_kept, int) or first_kept <= 0:
        return entries[c:]
    start = c
    for i in range(c - 1, -1, -1):
        e = entries[i]
        turn = e.get("turn")
        if e["type"] == "turn_start" and isinstance(turn, int) and turn < first_kept:
            break
        if isinstance(turn, int) and turn >= first_kept:
            start = i
    return entries[start:]


def chat_turns(entries: Sequence[JournalEntry]) -> list[int]:
    """Chat turns of ENTRIES that the projection shows, oldest first."""
    _, hidden = visible_turns(entries)
    excluded = hidden | directive_turns(entries)
    start, first_kept = 0, 0
    for i, e in enumerate(entries):
        if e["type"] == "compaction":
            start, first_kept = i + 1, int(e.get("first_kept_turn") or 0)
    turns: list[int] = []
    for i, e in enumerate(entries):
        turn = e.get("turn")
        if (
            e["type"] == "turn_start"
            and isinstance(turn, int)
            and turn not in excluded
            and (i >= start or (first_kept > 0 and turn >= first_kept))
        ):
            turns.append(turn)
    return turns


def next_turn(entries: Iterable[JournalEntry]) -> int:
    """The number the next accepted turn will get."""
    return 1 + max(
        (e["turn"] for e in entries if e["type"] == "turn_start" and isinstance(e["turn"], int)),
        default=0,
    )


def _from_turn(entries: Iterable[JournalEntry], first: int) -> list[JournalEntry]:
    """The entries of turns FIRST and later."""
    return [e for e in entries if isinstance(t := e.get("turn"), int) and t >= first]


def _before_turn(entries: Iterable[JournalEntry], first: int) -> list[JournalEntry]:
    """ENTRIES without those of turns FIRST and later (entries outside turns kept)."""
    return [e for e in entries if not (isinstance(t := e.get("turn"), int) and t >= first)]


def choose_first_kept(entries: Sequence[JournalEntry], policy: Policy) -> int:
    """The first turn kept verbatim: the newest ``keep_turns`` chat turns, fewer when
    they would take more than `KEEP_SHARE` of the window. Raises when nothing
    would be compacted."""
    turns = chat_turns(entries)
    has_summary = any(e["type"] == "compaction" for e in entries)
    budget = int(policy.window * KEEP_SHARE)
    keep = min(policy.keep_turns, len(turns))
    while keep > 0:
        first = turns[-keep]
        if estimate_tokens(project(_from_turn(entries, first))) <= budget:
            break
        keep -= 1
    compacted = turns[: len(turns) - keep]
    if not compacted:
        reason = (
            "only the turns kept verbatim follow the last compaction"
            if has_summary
            else "the session has no chat turn older than the ones kept verbatim"
        )
        raise TandemError("nothing-to-compact", f"Nothing to compact: {reason}.")
    return turns[-keep] if keep else next_turn(entries)


# -- the summary request -------------------------------------------------------------


def _clip(text: str, limit: int = TOOL_TEXT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} characters omitted]"


def render_transcript(messages: Iterable[Message]) -> str:
    """MESSAGES as a plain-text transcript (tool inputs and outputs clipped)."""
    parts: list[str] = []
    for m in messages:
        if m.role == "user":
            # A summary is text: an image is named where it was, its bytes are not sent.
            shown = "".join(f"\n\n[image {i.name} ({i.media_type}, {i.size} bytes) was attached]"
                            for i in m.images)
            parts.append(f"### User\n\n{m.text}{shown}")
        elif m.role == "tool":
            status = " (error)" if m.is_error else ""
            parts.append(f"### Tool result{status}\n\n{_clip(m.text)}")
        else:
            lines = [f"### Assistant\n\n{m.text}" if m.text else "### Assistant"]
            for call in m.tool_calls:
                args = _clip(json.dumps(call.input, ensure_ascii=False))
                lines.append(f"[tool call {call.name}: {args}]")
            parts.append("\n\n".join(lines))
    return "\n\n".join(parts)


def summary_messages(entries: Sequence[JournalEntry], first_kept: int) -> list[Message]:
    """The summary request's messages: the projection of every turn before FIRST_KEPT
    (with any earlier summary) as one transcript, then the instruction."""
    older = project(_before_turn(entries, first_kept))
    transcript = render_transcript(older)
    return [
        Message(role="user", text=f"<transcript>\n{transcript}\n</transcript>\n\n{SUMMARY_REQUEST}")
    ]


def compaction_entry(
    summary: str, first_kept: int, tokens_before: int, tokens_after: int
) -> CompactionEntry:
    """The ``compaction`` journal entry (``seq`` and ``ts`` are set by `Journal.append`)."""
    return {
        "type": "compaction",
        "seq": 0,
        "ts": "",
        "summary": summary,
        "first_kept_turn": first_kept,
        "tokens_before": tokens_before,
        "tokens_after": tokens_after,
    }


# -- rewind -------------------------------------------------------------------------


def compaction_blocks_rewind(entries: Iterable[JournalEntry], before_turn: int) -> str | None:
    """Why a rewind before BEFORE_TURN is refused, or None when it may go ahead.

    A rewind before a turn that the latest compaction summarised is refused:
    the summary would keep describing the discarded turns to the model.
    """
    if isinstance(before_turn, bool) or not isinstance(before_turn, int) or before_turn < 1:
        raise TandemError("invalid", f"before_turn must be a turn number >= 1, not {before_turn!r}")
    latest: CompactionEntry | None = None
    for e in entries:
        if e["type"] == "compaction":
            latest = e
    if latest is None:
        return None
    first_kept = int(latest.get("first_kept_turn") or 0)
    if before_turn >= first_kept > 0:
        return None
    bound = f"turn {first_kept} or later" if first_kept > 0 else "a turn after it"
    return (
        f"Cannot rewind before turn {before_turn}: the session was compacted (entry "
        f"#{latest.get('seq', '?')}) and its summary covers the turns before "
        f"{first_kept}, so the model would keep seeing what the rewind discards. "
        f"Rewind to {bound}."
    )


# -- running a request without a journal --------------------------------------------


@dataclass
class CollectSink:
    """A `TurnSink` that keeps the assistant's messages and writes nothing anywhere.

    Permission questions are refused: a summary or seed request must not act.
    """

    messages: list[str] = field(default_factory=list)
    tool_calls: int = 0
    _current: list[str] = field(default_factory=list)

    def text(self, delta: str) -> None:
        """Keep a piece of assistant text."""
        self._current.append(delta)

    def reasoning(self, delta: str) -> None:
        """Reasoning is not part of the summary."""

    def end_message(self) -> None:
        """Close the current message."""
        if self._current:
            self.messages.append("".join(self._current))
            self._current.clear()

    def tool_call(
        self, call_id: str, name: str, kind: ToolKind, title: str, input: Mapping[str, object],
        decided_by: str | None = None,
    ) -> None:
        """Count tool calls (a read-only request may still read)."""
        self.tool_calls += 1

    def tool_result(self, call_id: str, status: str, output: str) -> None:
        """Tool results are not part of the summary."""

    def plan(self, entries: Sequence[Mapping[str, object]]) -> None:
        """Plans are not part of the summary."""

    async def ask_permission(self, request: PermissionRequest) -> PermissionAnswer:
        """Always refuse."""
        return "reject"

    def final_text(self) -> str:
        """The last non-empty assistant message."""
        self.end_message()
        for text in reversed(self.messages):
            if text.strip():
                return text.strip()
        return ""


async def run_collecting(provider: Provider, request: TurnRequest) -> str:
    """Run REQUEST through PROVIDER into a `CollectSink`; return the final text.

    Any failure, cancel included, is a `TandemError` (code ``provider`` or
    ``cancelled``), raised before anything could be written.
    """
    sink = CollectSink()
    try:
        result = await provider.run(request, sink)
    except asyncio.CancelledError:
        raise TandemError("cancelled", "Compaction cancelled; the session is unchanged.") from None
    except TandemError as exc:
        raise TandemError("provider", f"{provider.name}: {exc.message}") from None
    except Exception as exc:  # a provider bug must not leave a half-done compaction
        log.exception("compaction request through %s failed", provider.name)
        raise TandemError("provider", f"{provider.name}: {type(exc).__name__}: {exc}") from None
    if result.outcome == "aborted":
        raise TandemError("cancelled", "Compaction cancelled; the session is unchanged.")
    if result.outcome != "succeeded":
        raise TandemError("provider", f"{provider.name} failed: {result.error or 'no reason'}")
    return sink.final_text()


def session_provider(
    entries: Sequence[JournalEntry], settings: Mapping[str, Any], requested: str | None
) -> tuple[str, str]:
    """(provider name, model) compaction uses: REQUESTED, else the provider of the
    latest visible chat turn, else the session's own choice (``provider_change``),
    else the settings' default."""
    if requested:
        parse_provider(requested)
        return requested, ""
    _, hidden = visible_turns(entries)
    for e in reversed(entries):
        if (
            e["type"] == "turn_start"
            and e["origin"] == "chat"
            and e["turn"] not in hidden
            and e.get("provider")
        ):
            name = str(e.get("provider"))
            try:
                parse_provider(name)
            except TandemError:
                continue
            return name, str(e.get("model") or "")
    # No visible chat turn (none yet, or every one rewound): the provider the
    # user chose for the session is the one its next turn would use.
    chosen = [e["provider"] for e in entries
              if e["type"] == "provider_change" and isinstance(e.get("provider"), str)]
    if chosen:
        return chosen[-1], ""
    return choose_provider(dict(settings), None), ""
