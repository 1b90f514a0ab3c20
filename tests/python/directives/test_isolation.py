"""Isolation both ways, proved on the request bodies a real HTTP fake model received.

One workspace, one session: root chat turns and directive turns interleave
in the same journal. Every request body is captured by the fake OpenAI
server and searched for the other side's text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ws_helpers import act, body_text, chat, create, get, make_app, marker_model, new_session

pytestmark = pytest.mark.anyio

ROOT_TEXTS = ("ROOTCHAT-SECRET", "ROOT-ANSWER-XYZ", "ROOTCHAT-2")
DIRECTIVE_TEXTS = ("DIRECTIVE-REQ", "DISCUSS-Q1", "DISCUSS-A1", "IMPL-A1", "FEEDBACK-1",
                   "IMPL-A2", "DR-Q", "DR-A")


def _new(fake: Any, seen: int) -> list[Any]:
    return fake.api_requests("/v1/chat/completions")[seen:]


async def test_isolation_both_ways(project: Path, tmp_path: Path, model: Any) -> None:
    fake = model(marker_model)
    app = make_app(tmp_path / "home", fake)
    try:
        sid = await new_session(app, project)
        assert (await chat(app, sid, "ROOTCHAT-SECRET: what is this project?")).outcome \
            == "succeeded"
        d = await create(app, project, "DIRECTIVE-REQ: make the greeting loud")
        assert d["id"] == "D1" and d["state"] == "ready"
        assert d["actions"] == ["discuss", "implement"]

        seen = len(fake.api_requests("/v1/chat/completions"))
        reply, ended = await act(app, project, "D1", "discuss", "DISCUSS-Q1 should we shout?",
                                 session=sid)
        assert ended.outcome == "succeeded" and reply["session"] == sid
        discuss_reqs = _new(fake, seen)
        assert len(discuss_reqs) == 1
        body = discuss_reqs[0].body
        # Only the isolated prompt: a system message and one user message.
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert "DIRECTIVE-REQ" in body_text(discuss_reqs[0])
        assert "hello world" in body_text(discuss_reqs[0])  # the anchor, read from disk
        assert not any(t in body_text(discuss_reqs[0]) for t in ROOT_TEXTS)

        seen = len(fake.api_requests("/v1/chat/completions"))
        await chat(app, sid, "ROOTCHAT-2 anything else?")
        (root2,) = _new(fake, seen)
        assert "ROOTCHAT-SECRET" in body_text(root2) and "ROOT-ANSWER-XYZ" in body_text(root2)
        assert not any(t in body_text(root2) for t in DIRECTIVE_TEXTS), body_text(root2)

        # Implement this: the complete discussion is in the prompt.
        seen = len(fake.api_requests("/v1/chat/completions"))
        reply, ended = await act(app, project, "D1", "implement-this")
        assert ended.outcome == "succeeded", ended.error
        assert reply["attempt"] == 1
        impl_reqs = _new(fake, seen)
        first = body_text(impl_reqs[0])
        assert "DISCUSS-Q1 should we shout?" in first and "DISCUSS-A1 yes, shout" in first
        assert not any(t in first for t in ROOT_TEXTS)
        assert (project / "a.txt").read_text() == "HELLO WORLD\n"
        rec = await get(app, project, "D1")
        assert rec["state"] == "implemented"
        (a1,) = rec["attempts"]
        assert a1["prompt"] == impl_reqs[0].body["messages"][-1]["content"]
        assert a1["answer"].endswith("IMPL-A1 wrote the loud greeting")
        assert a1["outcome"] == "succeeded" and a1["session"] == sid
        assert a1["patch"]["files"][0]["path"] == "a.txt" and a1["diff_chars"] > 0
        assert a1["completeness"] == "captured" and a1["checkpoint"]

        # Request changes: the preceding attempt's answer and patch, labelled historical.
        seen = len(fake.api_requests("/v1/chat/completions"))
        _, ended = await act(app, project, "D1", "request-changes", "FEEDBACK-1 add a bang")
        assert ended.outcome == "succeeded"
        rc = body_text(_new(fake, seen)[0])
        assert "IMPL-A1 wrote the loud greeting" in rc and "historical" in rc
        assert "+HELLO WORLD" in rc and "-hello world" in rc and "FEEDBACK-1" in rc
        assert not any(t in rc for t in ROOT_TEXTS)

        # Discuss result with attempt 1 selected: that attempt only.
        seen = len(fake.api_requests("/v1/chat/completions"))
        _, ended = await act(app, project, "D1", "discuss-result", "DR-Q is it right?",
                             attempt=1)
        assert ended.outcome == "succeeded"
        dr = body_text(_new(fake, seen)[0])
        assert "IMPL-A1 wrote the loud greeting" in dr
        # Not attempt 2 (the anchor is read fresh, so today's file text is there).
        assert "IMPL-A2" not in dr and "FEEDBACK-1" not in dr and "+HELLO WORLD!" not in dr
        assert not any(t in dr for t in ROOT_TEXTS)

        # The root chat still sees none of it.
        seen = len(fake.api_requests("/v1/chat/completions"))
        await chat(app, sid, "and now?")
        (root3,) = _new(fake, seen)
        assert not any(t in body_text(root3) for t in DIRECTIVE_TEXTS)

        rec = await get(app, project, "D1")
        assert rec["state"] == "discussed" and len(rec["attempts"]) == 2
        assert [t["action"] for t in rec["discussion"]] == ["discuss", "discuss-result"]
        assert rec["discussion"][1]["attempt"] == 1
        assert rec["attempts"][1]["based_on"] == 1
        # The journal keeps ordinary roles inside directive boundaries.
        journal = next((tmp_path / "home" / "sessions").rglob("*.jsonl"))
        entries = [json.loads(x) for x in journal.read_text().splitlines()[1:]]
        opens = [e for e in entries if e["type"] == "directive_open"]
        closes = [e for e in entries if e["type"] == "directive_close"]
        assert [(e["action"], e["attempt"]) for e in opens] == [
            ("discuss", None), ("implement-this", 1), ("request-changes", 2),
            ("discuss-result", 1)]
        assert len(closes) == 4
        assert {e["origin"] for e in entries if e["type"] == "turn_start"} == {"chat",
                                                                               "directive"}
    finally:
        await app.turns.aclose()


async def test_discussion_cannot_write(project: Path, tmp_path: Path, model: Any) -> None:
    """The executor refuses a discussion's write natively, whatever the permission mode."""
    fake = model(marker_model)
    app = make_app(tmp_path / "home", fake)
    try:
        sid = await new_session(app, project)
        await create(app, project, "Tidy the greeting")
        _, ended = await act(app, project, "D1", "discuss", "DISCUSS-WRITE please just do it",
                             session=sid, permission_mode="auto-edit")
        assert ended.outcome == "succeeded"
        assert not (project / "b.txt").exists()
        journal = next((tmp_path / "home" / "sessions").rglob("*.jsonl"))
        entries = [json.loads(x) for x in journal.read_text().splitlines()[1:]]
        (result,) = [e for e in entries if e["type"] == "tool_result"]
        assert result["status"] == "refused"
        start = next(e for e in entries if e["type"] == "turn_start")
        assert start["permission_mode"] == "read-only"
        assert not [e for e in entries if e["type"] == "interaction"]  # refused, never asked
        rec = await get(app, project, "D1")
        assert rec["discussion"][0]["answer"].endswith("WRITE-WAS-REFUSED")
        assert rec["attempts"] == []
    finally:
        await app.turns.aclose()


async def test_system_directive_is_sent_as_data_and_recorded(project: Path, tmp_path: Path,
                                                             model: Any) -> None:
    """The gptel-shaped directive: system text, then template turns, then the prompt."""
    fake = model(marker_model)
    app = make_app(tmp_path / "home", fake)
    try:
        sid = await new_session(app, project)
        await create(app, project, "Make it loud")
        system = {"name": "terse", "system": "TERSE-SYS", "template": ["TPL-U", "TPL-A"]}
        _, ended = await act(app, project, "D1", "implement", session=sid,
                             system_directive=system)
        assert ended.outcome == "succeeded"
        (req,) = fake.api_requests("/v1/chat/completions")
        msgs = req.body["messages"]
        assert [(m["role"], m["content"]) for m in msgs[:3]] == [
            ("system", "TERSE-SYS"), ("user", "TPL-U"), ("assistant", "TPL-A")]
        assert msgs[3]["role"] == "user" and msgs[3]["content"].startswith("# Directive D1")
        rec = await get(app, project, "D1")
        assert rec["attempts"][0]["directive"] == system
        # Without one, the backend's default for the action is used and recorded.
        _, ended = await act(app, project, "D1", "discuss", "DISCUSS-Q1")
        assert (await get(app, project, "D1"))["discussion"][0]["directive"]["name"] == "discuss"
    finally:
        await app.turns.aclose()


def _partial_then_fail(body: dict[str, Any]) -> Any:
    from fakes.script import Reply, ToolCallSpec
    from ws_helpers import content

    msgs = body["messages"]
    prompt = content([m for m in msgs if m.get("role") == "user"][-1])
    if "Try again and complete the request" in prompt:
        return Reply(text="RETRY-OK finished it")
    if msgs[-1].get("role") == "tool":
        return Reply(status=400, message="UPSTREAM-BROKE mid-way")
    return Reply(text="Starting.", tool_calls=[ToolCallSpec(
        name="write_file", input={"path": "a.txt", "content": "half done\n"})])


async def test_retry_carries_the_error_and_partial_changes(project: Path, tmp_path: Path,
                                                           model: Any) -> None:
    fake = model(_partial_then_fail)
    app = make_app(tmp_path / "home", fake)
    try:
        sid = await new_session(app, project)
        await create(app, project, "Rewrite the greeting")
        _, ended = await act(app, project, "D1", "implement", session=sid)
        assert ended.outcome == "failed" and "UPSTREAM-BROKE" in (ended.error or "")
        rec = await get(app, project, "D1")
        assert rec["state"] == "failed" and rec["actions"] == ["discuss", "discuss-result",
                                                               "retry"]
        assert rec["attempts"][0]["patch"]["files"][0]["path"] == "a.txt"
        seen = len(fake.api_requests("/v1/chat/completions"))
        _, ended = await act(app, project, "D1", "retry", "GUIDE-1 finish the job")
        assert ended.outcome == "succeeded"
        sent = body_text(fake.api_requests("/v1/chat/completions")[seen])
        assert "UPSTREAM-BROKE" in sent and "+half done" in sent and "GUIDE-1" in sent
        assert "historical" in sent
        rec = await get(app, project, "D1")
        assert rec["state"] == "implemented" and rec["attempts"][1]["based_on"] == 1
    finally:
        await app.turns.aclose()
