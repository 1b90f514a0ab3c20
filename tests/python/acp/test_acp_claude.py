"""Integration: AcpProvider drives the real Claude Code ACP adapter from npm
(`tests/acp_adapter.py` installs it) against the fake Anthropic server.

Nothing leaves the machine: ``ANTHROPIC_BASE_URL`` points at the fake, HOME is
a temporary directory, telemetry and updates are off. Each test skips, with
the reason printed, when npm or the adapter cannot be installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_adapter import AdapterUnavailable, ensure_adapter
from acp_helpers import RecordingSink, chat
from claude_helpers import Claude
from fakes.script import Match, Reply, Script, Step, ToolCallSpec, last_user_text

TURN_TIMEOUT = 90


@pytest.fixture(scope="module")
def adapter() -> Path:
    try:
        return ensure_adapter()
    except AdapterUnavailable as exc:
        print(f"\nskipping Claude ACP integration tests: {exc}", file=sys.stderr)
        pytest.skip(f"Claude Code ACP adapter unavailable: {exc}")


@pytest.fixture
def claude_factory(adapter: Path, tmp_path: Path) -> Iterator[Any]:
    made: list[Claude] = []

    def make(script: Script) -> Claude:
        c = Claude(adapter, tmp_path, script)
        made.append(c)
        return c

    yield make
    for c in made:
        # Safety net for a failed test: its event loop is gone, so signal directly.
        for pid in c.leftovers():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        c.close()


def _write_script(target: Path, ask: str) -> Script:
    return Script(
        [
            Step(
                match=Match(has_tools=True, last_user_contains=ask),
                reply=Reply(
                    text="I will create the file.",
                    tool_calls=[
                        ToolCallSpec(
                            name="Write", input={"file_path": str(target), "content": "hi\n"}
                        )
                    ],
                ),
            ),
            Step(match=Match(has_tools=True), reply=Reply(text="All done.")),
        ],
        default=Reply(text="OK"),
    )


def test_write_after_permission_streams_and_shuts_down_cleanly(
    claude_factory: Any, tmp_path: Path
) -> None:
    started = time.monotonic()
    target = tmp_path / "project" / "hello.txt"
    c: Claude = claude_factory(_write_script(target, "create hello"))

    async def scenario() -> Any:
        provider = c.provider()
        sink = RecordingSink("allow_once")
        result = await c.turn(provider, chat(c.root, "please create hello.txt"), sink)
        pid = provider.pid
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        await provider.close()
        return result, sink, pid, environ

    result, sink, pid, environ = asyncio.run(scenario())
    # The agent runs with the environment tandem built, whatever ours holds.
    assert f"HOME={c.home}".encode() in environ
    assert not any(v.startswith(b"IS_SANDBOX=") for v in environ)

    assert result.outcome == "succeeded", result.error
    assert target.read_text() == "hi\n"
    assert sink.streamed() == "I will create the file.All done."
    (call,) = sink.of("tool_call")
    assert call[2:4] == ("Write", "edit")
    assert call[5] == {"file_path": str(target), "content": "hi\n"}
    (asked,) = sink.asked
    assert asked.call_id == call[1] and asked.tool == "Write"
    (res,) = sink.of("tool_result")
    assert res[1] == call[1] and res[2] == "completed"
    kinds = sink.kinds()
    assert kinds.index("tool_call") < kinds.index("ask") < kinds.index("tool_result")
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert result.acp_session_id
    # The model saw the permission-granted tool result.
    assert "File created successfully" in json.dumps(c.agent_bodies()[-1]["messages"])
    assert pid is not None and c.leftovers() == []
    print(f"\nwrite-after-permission scenario: {time.monotonic() - started:.1f} s", file=sys.stderr)


def _echo(body: dict[str, Any]) -> Reply | None:
    if not body.get("tools"):
        return Reply(text="OK")
    return Reply(text=f"ANSWER[{last_user_text(body).strip()[-40:]}]")


def test_isolated_requests_get_fresh_sessions_root_chat_keeps_its_own(claude_factory: Any) -> None:
    c: Claude = claude_factory(Script.of(_echo))

    async def scenario() -> list[Any]:
        provider = c.provider()
        iso = {"isolated": True}
        out = [
            await c.turn(provider, chat(c.root, "root one marker-R1"), RecordingSink()),
            await c.turn(
                provider, chat(c.root, "directive alpha marker-DA", **iso), RecordingSink()
            ),
            await c.turn(
                provider, chat(c.root, "directive beta marker-DB", **iso), RecordingSink()
            ),
            await c.turn(
                provider,
                chat(c.root, "root one marker-R1", "ANSWER", "root two marker-R2"),
                RecordingSink(),
            ),
        ]
        await provider.close()
        return out

    r1, da, db, r2 = asyncio.run(scenario())
    assert [r.outcome for r in (r1, da, db, r2)] == ["succeeded"] * 4
    assert len(c.sent("session/new")) == 3
    assert not c.sent("session/load") and not c.sent("session/resume")
    assert r1.acp_session_id and r1.acp_session_id == r2.acp_session_id
    assert da.acp_session_id is None and db.acp_session_id is None
    prompted = [m["params"]["sessionId"] for m in c.sent("session/prompt")]
    assert len(set(prompted)) == 3 and prompted[0] == prompted[3]

    bodies = [json.dumps(b["messages"]) for b in c.agent_bodies()]
    alpha = [b for b in bodies if "marker-DA" in b]
    beta = [b for b in bodies if "marker-DB" in b]
    root_two = [b for b in bodies if "marker-R2" in b]
    assert alpha and beta and root_two
    # Each directive is one fresh conversation: nothing of the others in it.
    assert all("marker-R1" not in b and "marker-DB" not in b for b in alpha)
    assert all("marker-R1" not in b and "marker-DA" not in b for b in beta)
    # The root chat continues its own conversation, without the directives.
    assert all("marker-R1" in b and "marker-DA" not in b and "marker-DB" not in b for b in root_two)
    assert c.leftovers() == []


def test_read_only_rejects_write_without_asking(claude_factory: Any, tmp_path: Path) -> None:
    target = tmp_path / "project" / "forbidden.txt"
    c: Claude = claude_factory(_write_script(target, "write forbidden"))

    async def scenario() -> Any:
        provider = c.provider()
        sink = RecordingSink("allow_once")
        request = chat(c.root, "please write forbidden.txt", read_only=True, isolated=True)
        result = await c.turn(provider, request, sink)
        await provider.close()
        return result, sink

    result, sink = asyncio.run(scenario())
    assert result.outcome == "succeeded", result.error
    assert sink.asked == []
    assert not target.exists()
    (res,) = sink.of("tool_result")
    assert res[2] == "refused"
    answers = [
        m for d, m in c.wire if d == "outgoing" and "result" in m and "outcome" in m["result"]
    ]
    assert answers and answers[0]["result"]["outcome"]["optionId"] == "reject"
    assert c.leftovers() == []


def _stall(body: dict[str, Any]) -> Reply | None:
    if not body.get("tools"):
        return Reply(text="OK")
    if "after cancel" in last_user_text(body):
        return Reply(text="Fresh answer.")
    return Reply(text="Working on it...", stall=True)


def test_cancel_mid_turn_aborts_and_the_session_goes_on(claude_factory: Any) -> None:
    c: Claude = claude_factory(Script.of(_stall))

    async def scenario() -> Any:
        provider = c.provider()
        sink = RecordingSink()
        # Cancel the task that runs `run` itself: a wait_for around it would
        # turn the cancellation into CancelledError whatever run returns.
        task = asyncio.create_task(provider.run(chat(c.root, "long job"), sink))
        await asyncio.wait_for(sink.got_text.wait(), TURN_TIMEOUT)
        started = time.monotonic()
        task.cancel()
        result = await asyncio.wait_for(task, TURN_TIMEOUT)
        took = time.monotonic() - started
        follow_sink = RecordingSink()
        follow = await c.turn(provider, chat(c.root, "long job", "x", "after cancel"), follow_sink)
        await provider.close()
        return result, took, follow, follow_sink

    result, took, follow, follow_sink = asyncio.run(scenario())
    assert result.outcome == "aborted"
    assert took < 10
    assert len(c.sent("session/cancel")) == 1
    assert follow.outcome == "succeeded" and "Fresh answer." in follow_sink.streamed()
    assert follow.acp_session_id == result.acp_session_id
    assert c.leftovers() == []


def test_agent_killed_mid_turn_fails_without_hanging(claude_factory: Any) -> None:
    c: Claude = claude_factory(Script.of(_stall))

    async def scenario() -> Any:
        provider = c.provider()
        sink = RecordingSink()
        task = asyncio.create_task(c.turn(provider, chat(c.root, "long job"), sink))
        await asyncio.wait_for(sink.got_text.wait(), TURN_TIMEOUT)
        assert provider.pid is not None
        started = time.monotonic()
        os.kill(provider.pid, signal.SIGKILL)
        result = await asyncio.wait_for(task, 15)
        took = time.monotonic() - started
        await provider.close()
        return result, took

    result, took = asyncio.run(scenario())
    assert result.outcome == "failed"
    assert "killed by signal 9" in (result.error or "")
    assert took < 5
    assert c.leftovers() == []


def test_root_chat_resumes_after_a_restart(claude_factory: Any) -> None:
    c: Claude = claude_factory(Script.of(_echo))

    async def scenario() -> Any:
        first = c.provider()
        r1 = await c.turn(first, chat(c.root, "remember marker-BANANA"), RecordingSink())
        await first.close()
        second = c.provider(root_session_id=r1.acp_session_id)
        request = chat(c.root, "remember marker-BANANA", "ANSWER", "what did I say? marker-Q")
        r2 = await c.turn(second, request, RecordingSink())
        how = second.last_session
        await second.close()
        return r1, r2, how

    r1, r2, how = asyncio.run(scenario())
    assert r2.outcome == "succeeded", r2.error
    assert how is not None and how.how == "resume"
    assert r2.acp_session_id == r1.acp_session_id
    (prompt,) = [m for m in c.sent("session/prompt") if "marker-Q" in json.dumps(m)]
    assert "marker-BANANA" not in json.dumps(prompt)  # the agent holds the history itself
    body = next(b for b in c.agent_bodies() if "marker-Q" in json.dumps(b["messages"]))
    assert "marker-BANANA" in json.dumps(body["messages"])
    assert c.leftovers() == []


def test_unknown_root_session_falls_back_to_a_seeded_session(claude_factory: Any) -> None:
    c: Claude = claude_factory(Script.of(_echo))
    lost = "0b9f3b0e-7f0c-4d55-9a43-3f1f8c3f0a11"

    async def scenario() -> Any:
        provider = c.provider(root_session_id=lost)
        request = chat(c.root, "earlier marker-OLD", "ANSWER", "continue marker-NEW")
        result = await c.turn(provider, request, RecordingSink())
        how = provider.last_session
        await provider.close()
        return result, how

    result, how = asyncio.run(scenario())
    assert result.outcome == "succeeded", result.error
    assert how is not None and how.how == "seeded"
    assert result.acp_session_id not in (None, lost)
    (prompt,) = c.sent("session/prompt")
    text = prompt["params"]["prompt"][0]["text"]
    assert "marker-OLD" in text and text.endswith("continue marker-NEW")
    assert c.leftovers() == []
