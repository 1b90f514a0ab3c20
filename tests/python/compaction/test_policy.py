"""Pure parts of compaction: windows, settings, estimates, what to keep, rewind."""

from __future__ import annotations

from typing import Any

import pytest

from tandem.protocol.base import TandemError
from tandem.providers.base import Message, ToolCallRef
from tandem.sessions.compaction import (
    DEFAULT_WINDOW,
    Policy,
    chat_turns,
    choose_first_kept,
    compaction_blocks_rewind,
    compaction_entry,
    context_window,
    estimate_tokens,
    policy_from,
    render_transcript,
    summary_messages,
)
from tandem.sessions.projection import project


def _turn(n: int, text: str, answer: str, directive: bool = False) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "turn_start", "turn": n,
                                  "origin": "directive" if directive else "chat"}]
    if directive:
        out.append({"type": "directive_open", "turn": n, "workspace": "w", "directive": "D",
                    "action": "implement"})
    out += [{"type": "user", "turn": n, "text": text},
            {"type": "assistant", "turn": n, "text": answer}]
    if directive:
        out.append({"type": "directive_close", "turn": n, "directive": "D",
                    "outcome": "succeeded"})
    out.append({"type": "turn_end", "turn": n, "outcome": "succeeded"})
    return out


def _journal() -> list[dict[str, Any]]:
    return [*_turn(1, "u1", "a1"), *_turn(2, "SECRET", "dir", directive=True),
            *_turn(3, "u3", "a3"), *_turn(4, "u4", "a4"), {"type": "rewind", "before_turn": 4},
            *_turn(5, "u5", "a5"), *_turn(6, "u6", "a6")]


@pytest.mark.parametrize(("provider", "model", "window"), [
    ("openai:gpt-4o", "", 128_000), ("openai:gpt-4o-mini", "", 128_000),
    ("openai:gpt-4.1-mini", "", 1_047_576), ("anthropic:claude-sonnet-4-5", "", 200_000),
    ("acp:claude", "", 200_000), ("acp:codex", "", 400_000), ("acp:gemini", "", 1_048_576),
    ("openai:x", "gpt-4-turbo-2024", 128_000), ("openai:anthropic/claude-3.5", "", 200_000),
    ("openai:my-local-model", "", DEFAULT_WINDOW)])
def test_context_windows_of_common_models(provider: str, model: str, window: int) -> None:
    assert context_window(provider, model) == window


def test_settings_override_windows_by_name_or_prefix() -> None:
    assert context_window("openai:my-local", "", {"openai:my-local": 32_000}) == 32_000
    assert context_window("openai:my-local-7b", "", {"my-local": 8_000}) == 8_000
    assert context_window("acp:claude", "", {"claude": 1_000_000}) == 1_000_000
    with pytest.raises(TandemError, match="context_windows.m"):
        context_window("openai:m", "", {"m": "big"})
    with pytest.raises(TandemError, match=">= 1024"):
        context_window("openai:m", "", {"m": 10})
    with pytest.raises(TandemError, match="openai:MODEL"):
        context_window("nonsense", "")


@pytest.mark.parametrize(("settings", "word"), [
    ({"compaction_threshold": 0}, "compaction_threshold"),
    ({"compaction_threshold": "high"}, "compaction_threshold"),
    ({"compaction_threshold": True}, "compaction_threshold"),
    ({"compaction_keep_turns": -1}, "compaction_keep_turns"),
    ({"compaction_keep_turns": 1.5}, "compaction_keep_turns"),
    ({"auto_compact": "yes"}, "auto_compact"),
    ({"context_windows": [1]}, "context_windows")])
def test_bad_settings_are_clear_errors(settings: dict[str, Any], word: str) -> None:
    with pytest.raises(TandemError, match=word):
        policy_from(settings, "openai:gpt-4o")


def test_policy_defaults_and_limit() -> None:
    p = policy_from({}, "anthropic:claude-opus-4-1")
    assert p == Policy(window=200_000, threshold=0.8, keep_turns=2, auto=True)
    assert p.limit == 160_000


def test_estimate_counts_text_tool_inputs_and_non_ascii() -> None:
    assert estimate_tokens([]) == 0
    ascii_ = estimate_tokens([Message(role="user", text="x" * 400)])
    assert ascii_ == 100 + 4
    wide = estimate_tokens([Message(role="user", text="字" * 400)])
    assert wide == 300 + 4  # 3 bytes each: errs high for CJK, never low
    call = Message(role="assistant", tool_calls=[ToolCallRef(id="c", name="read_file",
                                                             input={"path": "a" * 40})])
    assert estimate_tokens([call]) > 10
    assert estimate_tokens([], system="s" * 8) == 2


def test_chat_turns_skip_directives_rewound_and_compacted() -> None:
    entries = _journal()
    assert chat_turns(entries) == [1, 3, 5, 6]
    compacted = [*entries, compaction_entry("S", 5, 10, 5)]
    assert chat_turns(compacted) == [5, 6]


def test_choose_first_kept_keeps_the_newest_turns_within_budget() -> None:
    entries = _journal()
    assert choose_first_kept(entries, Policy(window=100_000, keep_turns=2)) == 5
    assert choose_first_kept(entries, Policy(window=100_000, keep_turns=0)) == 7
    with pytest.raises(TandemError) as err:
        choose_first_kept(entries, Policy(window=100_000, keep_turns=10))
    assert err.value.code == "nothing-to-compact"
    # a huge newest turn does not fit a quarter of the window: fewer are kept
    big = [*entries, *_turn(7, "u7", "x" * 8000)]
    assert choose_first_kept(big, Policy(window=4096, keep_turns=2)) == 8
    mid = [*entries, *_turn(7, "u7", "x" * 3000), *_turn(8, "u8", "a8")]
    assert choose_first_kept(mid, Policy(window=6000, keep_turns=2)) == 7
    assert choose_first_kept(mid, Policy(window=2048, keep_turns=2)) == 8


def test_summary_request_is_built_from_the_projection_only() -> None:
    entries = _journal()
    (msg,) = summary_messages(entries, 5)
    assert "u1" in msg.text and "u3" in msg.text and "a3" in msg.text
    assert "SECRET" not in msg.text and "dir" not in msg.text  # directive turn
    assert "u4" not in msg.text  # rewound
    assert "u5" not in msg.text and "u6" not in msg.text  # kept verbatim
    after = [*entries, compaction_entry("THE SUMMARY", 5, 10, 5)]
    texts = [m.text for m in project(after)]
    assert texts[0].endswith("THE SUMMARY") and texts[2:] == ["u5", "a5", "u6", "a6"]
    # a later compaction summarises the earlier summary too
    later = [*after, *_turn(7, "u7", "a7")]
    (msg2,) = summary_messages(later, 7)
    assert "THE SUMMARY" in msg2.text and "u5" in msg2.text and "u1" not in msg2.text


def test_transcript_clips_tool_output() -> None:
    text = render_transcript([
        Message(role="assistant", text="reading",
                tool_calls=[ToolCallRef(id="1", name="read_file", input={"p": "x"})]),
        Message(role="tool", call_id="1", text="y" * 5000, is_error=True)])
    assert "[tool call read_file" in text and "Tool result (error)" in text
    assert "characters omitted" in text and len(text) < 2500


def test_rewind_across_a_compaction_is_refused_with_a_reason() -> None:
    entries = [*_journal(), {**compaction_entry("S", 5, 10, 5), "seq": 40}]
    assert compaction_blocks_rewind(_journal(), 1) is None  # no compaction
    assert compaction_blocks_rewind(entries, 5) is None
    assert compaction_blocks_rewind(entries, 6) is None
    reason = compaction_blocks_rewind(entries, 3)
    assert reason is not None and "compacted" in reason and "turn 5 or later" in reason
    assert "#40" in reason
    everything = [*_journal(), compaction_entry("S", 7, 10, 5)]
    assert compaction_blocks_rewind(everything, 6) is not None
    for bad in (0, -1, "3", True):
        with pytest.raises(TandemError):
            compaction_blocks_rewind(entries, bad)  # type: ignore[arg-type]
