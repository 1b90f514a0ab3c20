"""Golden tests of the event mapping on frames recorded from the real agent-server 1.58.2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tandem.providers.base import PermissionAnswer, PermissionRequest
from tandem.remote.events_map import EventMap, tool_kind, usage_of

FIXTURES = Path(__file__).parent / "fixtures"


class Recorder:
    """A TurnSink that notes every call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def text(self, delta: str) -> None:
        self.calls.append(("text", delta))

    def reasoning(self, delta: str) -> None:
        self.calls.append(("reasoning", delta))

    def end_message(self) -> None:
        self.calls.append(("end_message",))

    def tool_call(self, call_id: str, name: str, kind: str, title: str,
                  input: dict[str, Any], decided_by: str | None = None) -> None:
        self.calls.append(("tool_call", call_id, name, kind, title, input))

    def tool_result(self, call_id: str, status: str, output: str) -> None:
        self.calls.append(("tool_result", call_id, status, output))

    def plan(self, entries: list[dict[str, Any]]) -> None:
        self.calls.append(("plan", entries))

    async def ask_permission(self, request: PermissionRequest) -> PermissionAnswer:
        raise AssertionError("the mapping never asks")


def frames(name: str) -> list[dict[str, Any]]:
    return list(json.loads((FIXTURES / name).read_text()))


def test_terminal_turn_with_a_confirmation_maps_to_rows_text_and_usage() -> None:
    sink = Recorder()
    emap = EventMap(sink)
    statuses = []
    for frame in frames("terminal_turn_confirm.json"):
        if "event" in frame:
            emap.on_event(frame["event"])
            statuses.append(emap.status)
            if emap.status == "waiting_for_confirmation":
                assert [a.call_id for a in emap.pending] == ["call_fake0001"]
    command = "echo hi > hi.txt && cat hi.txt"
    assert sink.calls == [
        ("tool_call", "call_fake0001", "terminal", "execute", f"Run: {command}",
         {"command": command}),
        ("tool_result", "call_fake0001", "completed", "hi"),
        ("text", "All done: wrote hi.txt"),
        ("end_message",),
    ]
    assert "waiting_for_confirmation" in statuses and emap.status == "finished"
    assert emap.ended and emap.ran_shell and emap.pending == []
    assert emap.usage.input_tokens == 36 and emap.usage.output_tokens == 24


def test_a_repeated_event_is_mapped_once() -> None:
    sink = Recorder()
    emap = EventMap(sink)
    events = [f["event"] for f in frames("terminal_turn_confirm.json") if "event" in f]
    for event in events + events:
        emap.on_event(event)
    assert [c[0] for c in sink.calls] == ["tool_call", "tool_result", "text", "end_message"]


def test_tool_classes_and_usage_of_nothing() -> None:
    assert tool_kind("terminal", {"command": "ls"}) == "execute"
    assert tool_kind("file_editor", {"command": "view", "path": "/a"}) == "read"
    assert tool_kind("file_editor", {"command": "str_replace", "path": "/a"}) == "edit"
    assert tool_kind("finish", {}) == "read"
    assert tool_kind("browser_navigate", {}) == "other"
    assert usage_of(None).input_tokens == 0
    assert usage_of({"usage_to_metrics": {"x": "garbage"}}).output_tokens == 0


def test_a_file_edit_row_carries_its_diff() -> None:
    sink = Recorder()
    emap = EventMap(sink)
    emap.on_event({"id": "e1", "kind": "ActionEvent", "tool_name": "file_editor",
                   "tool_call_id": "c1", "thought": [{"type": "text", "text": "editing"}],
                   "action": {"kind": "FileEditorAction", "command": "str_replace",
                              "path": "/w/a.py", "old_str": "x = 1\n", "new_str": "x = 2\n"}})
    emap.on_event({"id": "e2", "kind": "ObservationEvent", "tool_call_id": "c1",
                   "observation": {"kind": "FileEditorObservation", "is_error": True,
                                   "content": [{"type": "text", "text": "no match"}]}})
    text, end, call, result = sink.calls
    assert text == ("text", "editing") and end == ("end_message",)
    assert call[:5] == ("tool_call", "c1", "file_editor", "edit", "str_replace /w/a.py")
    assert "-x = 1\n+x = 2\n" in call[5]["diff"] and call[5]["old_str"] == "x = 1\n"
    assert result == ("tool_result", "c1", "failed", "no match")
    assert not emap.ran_shell


def test_errors_are_kept_in_the_servers_words() -> None:
    sink = Recorder()
    emap = EventMap(sink)
    emap.on_event({"id": "e1", "kind": "ConversationErrorEvent", "code": "LLMError",
                   "detail": "rate limited by the provider"})
    emap.on_event({"id": "e2", "kind": "ConversationStateUpdateEvent",
                   "key": "execution_status", "value": "error"})
    assert emap.ended and emap.error == "rate limited by the provider"


def test_hostile_events_are_dropped_or_read_defensively() -> None:
    # The server's frames are untrusted: wrong types, missing fields, junk kinds.
    sink = Recorder()
    emap = EventMap(sink)
    hostile: list[Any] = [
        None, 7, "text", [1, 2], {},
        {"kind": "MessageEvent", "source": "agent", "llm_message": "not an object"},
        {"kind": "MessageEvent", "source": "agent",
         "llm_message": {"role": "assistant", "content": [{"type": "text", "text": 5}, None]}},
        {"kind": "ActionEvent", "id": ["unhashable"], "action": 3, "tool_name": None},
        {"kind": "ObservationEvent", "tool_call_id": {"x": 1}, "observation": []},
        {"kind": "ConversationStateUpdateEvent", "key": "execution_status", "value": 9},
        {"kind": "AgentErrorEvent", "error": {"nested": True}},
        {"kind": "NoSuchEvent", "id": "e1"},
    ]
    for event in hostile:
        emap.on_event(event)
    assert emap.status is None  # a non-string status is not taken
    kinds = [c[0] for c in sink.calls]
    assert set(kinds) <= {"text", "end_message", "tool_call", "tool_result"}
    assert emap.error == "{'nested': True}"


def test_a_frame_that_is_not_a_json_object_is_a_named_error() -> None:
    from tandem.protocol.base import TandemError
    from tandem.remote.stream import _frame

    assert _frame('{"type": "durable", "seq": 1}', "c1") == {"type": "durable", "seq": 1}
    for raw in ("not json", "[1, 2]", "null", b"\xff\xfe"):
        try:
            _frame(raw, "c1")
        except TandemError as e:
            assert e.code == "remote-invalid" and "c1" in e.message
        else:
            raise AssertionError(f"{raw!r} was taken as a frame")


def feed(emap: EventMap, frame: dict[str, Any]) -> None:
    """Route one socket FRAME as the engine does: a delta, or a frame's event."""
    if frame.get("type") == "delta":
        emap.on_delta(frame)
    elif "event" in frame:
        emap.on_event(frame["event"])


def texts_per_message(calls: list[tuple[Any, ...]]) -> list[str]:
    """The assistant messages the sink saw: text pieces joined up to each end_message."""
    out, now = [], ""
    for call in calls:
        if call[0] == "text":
            now += call[1]
        elif call[0] == "end_message":
            out.append(now)
            now = ""
    return out


def test_streamed_deltas_reach_the_sink_and_the_message_does_not_repeat_them() -> None:
    sink = Recorder()
    emap = EventMap(sink)
    for frame in frames("streamed_turn.json"):
        feed(emap, frame)
    kinds = [c[0] for c in sink.calls]
    assert kinds == ["text", "text", "text", "end_message", "tool_call", "tool_result",
                     "text", "text", "text", "text", "text", "end_message"]
    assert texts_per_message(sink.calls) == ["Let me run it.", "Done: it said hi."]
    assert emap.status == "finished" and emap.streamed == {}


def test_a_stream_cut_short_gets_its_rest_from_the_message() -> None:
    sink = Recorder()
    emap = EventMap(sink)
    recorded = frames("streamed_turn.json")
    last = [f for f in recorded if f.get("type") == "delta"][-1]
    for frame in recorded:
        if frame is not last:
            feed(emap, frame)
    assert texts_per_message(sink.calls) == ["Let me run it.", "Done: it said hi."]
    assert sink.calls[-2] == ("text", ".")


def test_streamed_reasoning_goes_to_reasoning_once() -> None:
    sink = Recorder()
    emap = EventMap(sink)
    emap.on_delta({"type": "delta", "item_id": "m1", "order": 0, "kind": "reasoning",
                   "content": "hmm"})
    emap.on_delta({"type": "delta", "item_id": "m1", "order": 1, "kind": "text",
                   "content": "Yes"})
    emap.on_event({"id": "m1", "kind": "MessageEvent", "source": "agent",
                   "llm_message": {"role": "assistant", "content": [
                       {"type": "text", "text": "Yes"}],
                       "thinking_blocks": [{"thinking": "hmm"}]}})
    assert sink.calls == [("reasoning", "hmm"), ("text", "Yes"), ("end_message",)]


def test_a_retried_stream_drops_late_frames_of_the_old_attempt() -> None:
    sink = Recorder()
    emap = EventMap(sink)
    emap.on_delta({"type": "delta", "item_id": "m1", "attempt": 1, "order": 0,
                   "content": "Hel"})
    emap.on_delta({"type": "delta", "item_id": "m1", "attempt": 2, "order": 0,
                   "content": "Hello"})
    emap.on_delta({"type": "delta", "item_id": "m1", "attempt": 1, "order": 1,
                   "content": "p!"})  # late: superseded
    emap.on_event({"id": "m1", "kind": "MessageEvent", "source": "agent",
                   "llm_message": {"role": "assistant", "content": "Hello world"}})
    assert sink.calls == [("text", "Hel"), ("text", "Hello"), ("text", " world"),
                          ("end_message",)]
