"""A write or edit the user reshaped before it landed, and a rejection with a reason.

The answer's ``content`` and ``reason`` are validated at the boundary (which
answer they go with, their size, one line); the sink refuses an edited change
for a question that did not offer one (a shell call, a protected write); the
executor writes the user's content through the write tools' own guards, so
``.git`` and a protected path stay refused, and tells the model the diff.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tandem.events import NullSink
from tandem.protocol.base import TandemError
from tandem.protocol.turns import MAX_EDITED_BYTES, AnswerParams
from tandem.providers.base import Message, PermissionReply, PermissionRequest, TurnRequest
from tandem.store.journal import Journal
from tandem.tools.base import ToolContext
from tandem.tools.edit import MAX_EDIT_DIFF
from tandem.tools.executor import ToolExecutor
from tandem.tools.permissions import SessionGrants
from tandem.turns.sink import JournalSink

pytestmark = pytest.mark.anyio


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty project folder."""
    project = tmp_path / "project"
    project.mkdir()
    return project.resolve()


# -- the answer's params ------------------------------------------------------

def _params(**kw: Any) -> AnswerParams:
    return AnswerParams.model_validate({"session": "s", "interaction_id": "1.1", **kw})


def test_content_and_reason_are_taken_with_their_answers() -> None:
    edited = _params(answer="allow_once", content="new text\n")
    assert edited.content == "new text\n" and edited.reason is None
    rejected = _params(answer="reject", reason="  use the helper in utils  ")
    assert rejected.reason == "use the helper in utils"
    assert _params(answer="reject", reason="").reason is None  # an empty reason is none


@pytest.mark.parametrize(("kw", "said"), [
    ({"answer": "reject", "content": "x"}, "content (an edited change) goes with the answer "
                                           "allow_once, not reject"),
    ({"answer": "allow_session", "content": "x"}, "not allow_session"),
    ({"answer": "allow_once", "reason": "why"}, "a reason goes with the answer reject"),
    ({"answer": "reject", "reason": "two\nlines"}, "the reason must be one line"),
    ({"answer": "reject", "reason": "r" * 1001}, "the reason is 1001 characters, over the "
                                                 "limit of 1000"),
])
def test_a_mismatched_or_malformed_extra_is_refused_with_a_sentence(
        kw: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError) as info:
        _params(**kw)
    assert said in str(info.value)


def test_an_edited_change_over_the_cap_is_refused_naming_its_size() -> None:
    big = "é" * (MAX_EDITED_BYTES // 2 + 1)  # two bytes each: just over in UTF-8
    with pytest.raises(ValidationError) as info:
        _params(answer="allow_once", content=big)
    assert f"{MAX_EDITED_BYTES + 2:,} bytes, over the limit" in str(info.value)
    assert "4 MiB" in str(info.value)
    assert _params(answer="allow_once", content="x" * MAX_EDITED_BYTES).content


# -- the sink: which questions take an edited change ---------------------------

async def _pending(tmp_path: Path, request: PermissionRequest) -> tuple[JournalSink, Any]:
    journal = Journal.create(tmp_path / "home", str(tmp_path))
    sink = JournalSink(journal, NullSink(), turn=1)
    task = asyncio.ensure_future(sink.ask_permission(request))
    for _ in range(100):
        if sink.pending:
            break
        await asyncio.sleep(0.01)
    return sink, task


@pytest.mark.parametrize(("request_kw", "said"), [
    ({"tool": "shell", "kind": "execute"}, "only a write_file or edit_file question takes "
                                           "one, not shell"),
    ({"tool": "write_file", "kind": "edit", "once_only": True},
     "a write to a protected path is allowed or rejected as the model proposed it"),
])
async def test_the_sink_refuses_an_edited_change_the_question_did_not_offer(
        tmp_path: Path, request_kw: dict[str, Any], said: str) -> None:
    request = PermissionRequest(call_id="c1", title="t", **request_kw)
    sink, task = await _pending(tmp_path, request)
    (interaction,) = sink.pending
    with pytest.raises(TandemError) as info:
        sink.answer(interaction, PermissionReply(answer="allow_once", content="x"))
    assert info.value.code == "invalid" and said in info.value.message
    assert not task.done()  # still waiting: a plain answer is still possible
    assert sink.answer(interaction, PermissionReply(answer="reject", reason="no"))
    assert await task == "reject"
    assert request.reply is not None and request.reply.reason == "no"


async def test_the_sink_journals_that_the_user_edited_the_change(tmp_path: Path) -> None:
    request = PermissionRequest(call_id="c1", tool="write_file", kind="edit", title="t",
                                editable=True)
    sink, task = await _pending(tmp_path, request)
    (interaction,) = sink.pending
    assert sink.answer(interaction, PermissionReply(answer="allow_once", content="mine"))
    assert await task == "allow_once"
    assert request.reply is not None and request.reply.content == "mine"
    answers = [e for e in sink.journal.entries() if e.type == "interaction_answer"]
    assert [(e.answer, getattr(e, "edited", None)) for e in answers] == [("allow_once", True)]


# -- the executor: what is written and what the model is told ------------------

class Sink:
    """A TurnSink answering every question with REPLY (the way the real sink fills it)."""

    def __init__(self, reply: PermissionReply) -> None:
        self.reply = reply
        self.asked: list[PermissionRequest] = []
        self.results: list[tuple[str, str]] = []

    def tool_call(self, call_id: str, name: str, kind: str, title: str, input: Any,
                  decided_by: str | None = None) -> None:
        pass

    def tool_result(self, call_id: str, status: str, output: str) -> None:
        self.results.append((status, output))

    async def ask_permission(self, request: PermissionRequest) -> str:
        self.asked.append(request)
        request.reply = self.reply
        return self.reply.answer


def _executor(root: Path, reply: PermissionReply) -> tuple[ToolExecutor, Sink]:
    sink = Sink(reply)
    req = TurnRequest(session_id="s", turn=1, root=root, model="m", read_only=False,
                      messages=[Message(role="user", text="x")], permission_mode="ask")
    ctx = ToolContext(root=root, protected_paths=req.protected_paths)
    return ToolExecutor(req, sink, ctx, grants=SessionGrants()), sink  # type: ignore[arg-type]


async def test_the_users_content_is_written_and_the_model_told_the_diff(root: Path) -> None:
    executor, sink = _executor(root, PermissionReply(answer="allow_once",
                                                     content="def f():\n    return 2\n"))
    out = await executor.run("c1", "write_file",
                             {"path": "a.py", "content": "def f():\n    return 1\n"})
    assert out.status == "completed", out
    assert (root / "a.py").read_text() == "def f():\n    return 2\n"
    assert sink.asked[0].editable
    assert "The user edited your proposed change before it was written" in out.output
    assert "--- a.py (your proposal)\n+++ a.py (written)\n" in out.output
    assert "-    return 1\n+    return 2\n" in out.output


async def test_an_edit_files_proposal_is_the_replaced_file(root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    executor, _ = _executor(root, PermissionReply(answer="allow_once",
                                                  content="one\nTWO!\nthree\n"))
    out = await executor.run("c1", "edit_file",
                             {"path": "a.txt", "old_text": "two", "new_text": "TWO"})
    assert out.status == "completed", out
    assert (root / "a.txt").read_text() == "one\nTWO!\nthree\n"
    assert "-TWO\n+TWO!\n" in out.output  # against the model's result, not the old file


async def test_an_unchanged_edit_says_so(root: Path) -> None:
    executor, _ = _executor(root, PermissionReply(answer="allow_once", content="same"))
    out = await executor.run("c1", "write_file", {"path": "a.txt", "content": "same"})
    assert "accepted it unchanged" in out.output and (root / "a.txt").read_text() == "same"


async def test_the_diff_the_model_is_told_is_bounded(root: Path) -> None:
    content = "".join(f"line {i}\n" for i in range(5000))
    executor, _ = _executor(root, PermissionReply(answer="allow_once", content=content))
    out = await executor.run("c1", "write_file", {"path": "big.txt", "content": "x\n"})
    assert (root / "big.txt").read_text() == content
    assert len(out.output.encode()) < MAX_EDIT_DIFF + 1000
    assert "[output truncated:" in out.output


@pytest.mark.parametrize("path", [".claude/settings.json", ".envrc"])
async def test_a_user_edit_of_a_protected_write_is_still_refused_by_the_guard(
        root: Path, path: str) -> None:
    # The real sink refuses such an answer (test above); past it, the tool's guard does.
    executor, sink = _executor(root, PermissionReply(answer="allow_once", content="{}"))
    out = await executor.run("c1", "write_file", {"path": path, "content": "{}"})
    assert sink.asked[0].once_only and not sink.asked[0].editable
    assert out.status == "failed", out
    assert "protected path" in out.output and "the user did not allow this write" in out.output
    assert list(root.iterdir()) == []


async def test_a_user_edit_never_writes_under_git(root: Path) -> None:
    (root / ".git").mkdir()
    executor, _ = _executor(root, PermissionReply(answer="allow_once", content="#!/bin/sh\n"))
    out = await executor.run("c1", "write_file", {"path": ".git/hooks/pre-commit",
                                                  "content": "echo"})
    assert out.status == "failed", out
    assert ".git" in out.output
    assert not (root / ".git" / "hooks").exists()


async def test_a_rejections_reason_reaches_the_model(root: Path) -> None:
    executor, _ = _executor(root, PermissionReply(answer="reject",
                                                  reason="keep the old name"))
    out = await executor.run("c1", "write_file", {"path": "a.txt", "content": "x"})
    assert out.status == "refused"
    assert out.output == ("The user rejected this tool call; it did not run. "
                          "The user's reason: keep the old name")
    assert not (root / "a.txt").exists()
