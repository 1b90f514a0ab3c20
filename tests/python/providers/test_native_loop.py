"""The native agent loop against real local HTTP fakes of both wire formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.script import Reply, Script, ToolCallSpec
from native_helpers import (
    FAMILIES,
    KEY,
    RecordingSink,
    api_path,
    make_fake,
    make_provider,
    request,
    tool_result_sent,
)

from tandem.tools.permissions import SessionGrants

pytestmark = pytest.mark.anyio

EDIT = ToolCallSpec(
    name="edit_file", input={"path": "a.txt", "old_text": "world", "new_text": "tandem"}
)


@pytest.mark.parametrize("family", FAMILIES)
async def test_streamed_answer(family: str, workspace: Path) -> None:
    text = "Hello from the fake model, in several pieces."
    with make_fake(family, [Reply(text=text, chunk_size=5, output_tokens=9)]) as fake:
        provider = make_provider(family, fake)
        sink = RecordingSink()
        result = await provider.run(request(workspace, "Say hello", system="Be brief."), sink)
        await provider.close()
    assert result.outcome == "succeeded", result.error
    assert sink.streamed() == text
    assert len(sink.of("text")) == -(-len(text) // 5)  # streamed, not in one piece
    assert [k for k, _ in sink.calls][-1] == "end_message"
    assert result.usage.output_tokens == 9 and result.usage.input_tokens > 0
    (req,) = fake.api_requests(api_path(family))
    body = req.body
    assert body["stream"] is True and body["model"] == "fake-model"
    assert {t.get("name") or t["function"]["name"] for t in body["tools"]} >= {
        "read_file",
        "edit_file",
        "write_file",
        "shell",
        "grep",
        "list_files",
    }
    if family == "openai":
        assert req["headers"]["authorization"] == f"Bearer {KEY}"
        assert body["messages"][0] == {"role": "system", "content": "Be brief."}
        assert body["messages"][1] == {"role": "user", "content": "Say hello"}
    else:
        assert req["headers"]["x-api-key"] == KEY
        assert req["headers"]["anthropic-version"] == "2023-06-01"
        assert body["system"] == [
            {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
        ]
        assert body["messages"] == [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Say hello", "cache_control": {"type": "ephemeral"}}
                ],
            }
        ]


@pytest.mark.parametrize("family", FAMILIES)
async def test_tool_loop_edits_after_allow_once(family: str, workspace: Path) -> None:
    script = [Reply(text="I will edit.", tool_calls=[EDIT]), Reply(text="Done.")]
    with make_fake(family, script) as fake:
        provider = make_provider(family, fake)
        sink = RecordingSink(answers=["allow_once"])
        result = await provider.run(request(workspace), sink)
    assert result.outcome == "succeeded", result.error
    assert (workspace / "a.txt").read_text() == "hello tandem\n"
    (asked,) = sink.asked
    assert asked.tool == "edit_file" and asked.kind == "edit" and asked.title == "Edit a.txt"
    kinds = [k for k, _ in sink.calls if k != "text"]
    assert kinds == [
        "end_message",
        "tool_call",
        "interaction",
        "interaction_answer",
        "tool_result",
        "end_message",
    ]
    (res,) = sink.of("tool_result")
    assert res["status"] == "completed" and "Edited a.txt" in res["output"]
    first, second = fake.api_requests(api_path(family))
    assert tool_result_sent(family, second) == [res["output"]]
    # The assistant's tool call goes back verbatim before its result.
    assert len(second.body["messages"]) == len(first.body["messages"]) + 2
    if family == "anthropic":
        # One moving prompt-cache breakpoint on the last block, never more.
        assert json.dumps(second.body["messages"]).count("cache_control") == 1
        assert "cache_control" in second.body["messages"][-1]["content"][-1]


@pytest.mark.parametrize("family", FAMILIES)
async def test_rejected_permission_leaves_file_and_tells_model(
    family: str, workspace: Path
) -> None:
    script = [Reply(tool_calls=[EDIT]), Reply(text="Understood, not editing.")]
    with make_fake(family, script) as fake:
        sink = RecordingSink(answers=["reject"])
        result = await make_provider(family, fake).run(request(workspace), sink)
    assert result.outcome == "succeeded"
    assert (workspace / "a.txt").read_text() == "hello world\n"
    (res,) = sink.of("tool_result")
    assert res["status"] == "refused"
    sent = tool_result_sent(family, fake.api_requests(api_path(family))[1])
    assert sent == ["The user rejected this tool call; it did not run."]
    if family == "anthropic":
        block = fake.api_requests(api_path(family))[1].body["messages"][-1]["content"][0]
        assert block["is_error"] is True


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("how", ["mode", "ceiling"])
async def test_read_only_refuses_edit_without_asking(
    family: str, how: str, workspace: Path
) -> None:
    write = ToolCallSpec(name="write_file", input={"path": "new.txt", "content": "x"})
    shell = ToolCallSpec(name="shell", input={"command": "touch ran.txt"})
    read = ToolCallSpec(name="read_file", input={"path": "a.txt"})
    script = [Reply(tool_calls=[EDIT, write, shell, read]), Reply(text="ok")]
    kw = {"permission_mode": "read-only"} if how == "mode" else {"read_only": True}
    grants = SessionGrants()
    grants.grant("s1", "edit_file")  # an earlier "allow for session" must not lift it
    with make_fake(family, script) as fake:
        sink = RecordingSink(answers=[])  # any question fails the test
        result = await make_provider(family, fake, grants=grants).run(
            request(workspace, **kw), sink
        )
    assert result.outcome == "succeeded"
    assert sink.asked == []
    assert (workspace / "a.txt").read_text() == "hello world\n"
    assert not (workspace / "new.txt").exists() and not (workspace / "ran.txt").exists()
    statuses = [r["status"] for r in sink.of("tool_result")]
    assert statuses == ["refused", "refused", "refused", "completed"]
    sent = tool_result_sent(family, fake.api_requests(api_path(family))[1])
    assert all(s.startswith("Refused:") for s in sent[:3]) and "hello world" in sent[3]
    assert result.ran_shell is False


@pytest.mark.parametrize("family", FAMILIES)
async def test_auto_edit_edits_but_asks_for_shell(family: str, workspace: Path) -> None:
    shell = ToolCallSpec(name="shell", input={"command": "echo hi > ran.txt"})
    script = [Reply(tool_calls=[EDIT, shell]), Reply(text="ok")]
    with make_fake(family, script) as fake:
        sink = RecordingSink(answers=["allow_once"])
        result = await make_provider(family, fake).run(
            request(workspace, permission_mode="auto-edit"), sink
        )
    assert result.outcome == "succeeded" and result.ran_shell is True
    assert [a.tool for a in sink.asked] == ["shell"]
    assert (workspace / "a.txt").read_text() == "hello tandem\n"
    assert (workspace / "ran.txt").read_text() == "hi\n"


@pytest.mark.parametrize("family", FAMILIES)
async def test_allow_for_session_is_remembered_per_session(family: str, workspace: Path) -> None:
    write = [
        ToolCallSpec(name="write_file", input={"path": f"f{i}.txt", "content": "x"})
        for i in range(3)
    ]
    script = [
        Reply(tool_calls=[write[0]]),
        Reply(text="1"),
        Reply(tool_calls=[write[1]]),
        Reply(text="2"),
        Reply(tool_calls=[write[2]]),
        Reply(text="3"),
    ]
    grants = SessionGrants()
    with make_fake(family, script) as fake:
        provider = make_provider(family, fake, grants=grants)
        sink = RecordingSink(answers=["allow_session", "allow_once"])
        assert (await provider.run(request(workspace, session_id="s1"), sink)).outcome == (
            "succeeded"
        )
        assert (
            await provider.run(request(workspace, session_id="s1", turn=2), sink)
        ).outcome == "succeeded"
        assert (await provider.run(request(workspace, session_id="s2"), sink)).outcome == (
            "succeeded"
        )
    assert [a.input["path"] for a in sink.asked] == ["f0.txt", "f2.txt"]
    assert all((workspace / f"f{i}.txt").exists() for i in range(3))


@pytest.mark.parametrize("family", FAMILIES)
async def test_model_mistakes_are_reported_back(family: str, workspace: Path) -> None:
    calls = [
        ToolCallSpec(name="no_such_tool", input={}),
        ToolCallSpec(name="read_file", input={"pathh": "a.txt"}),
        ToolCallSpec(name="read_file", input={"path": "../outside.txt"}),
        ToolCallSpec(
            name="edit_file", input={"path": "a.txt", "old_text": "absent", "new_text": "x"}
        ),
    ]
    with make_fake(family, [Reply(tool_calls=calls), Reply(text="sorry")]) as fake:
        sink = RecordingSink(answers=["allow_once"])
        result = await make_provider(family, fake).run(request(workspace), sink)
    assert result.outcome == "succeeded"
    outs = [(r["status"], r["output"]) for r in sink.of("tool_result")]
    assert outs[0] == ("failed", "unknown tool 'no_such_tool'")
    assert outs[1][0] == "failed" and "pathh" in outs[1][1]
    assert outs[2][0] == "failed" and "outside the workspace root" in outs[2][1]
    assert outs[3][0] == "failed" and "old_text not found" in outs[3][1]
    assert tool_result_sent(family, fake.api_requests(api_path(family))[1]) == [o for _, o in outs]


@pytest.mark.parametrize("family", FAMILIES)
async def test_max_steps_bounds_a_looping_model(family: str, workspace: Path) -> None:
    read = ToolCallSpec(name="read_file", input={"path": "a.txt"})
    with make_fake(family, Script(default=Reply(tool_calls=[read]))) as fake:
        sink = RecordingSink()
        result = await make_provider(family, fake, max_steps=3).run(request(workspace), sink)
    assert result.outcome == "failed" and result.error == "stopped after 3 model requests"
    assert len(fake.api_requests(api_path(family))) == 3


async def test_anthropic_thinking_is_streamed_and_sent_back_signed(workspace: Path) -> None:
    from tandem.providers.anthropic import AnthropicWire
    from tandem.providers.credentials import resolve_credentials
    from tandem.providers.native import LoopLimits, NativeProvider

    read = ToolCallSpec(name="read_file", input={"path": "a.txt"})
    script = [Reply(thinking="Let me look.", tool_calls=[read]), Reply(text="It says hello.")]
    with make_fake("anthropic", script) as fake:
        creds = resolve_credentials("anthropic", api_key=KEY, base_url=fake.base_url, env={})
        provider = NativeProvider(
            "anthropic:x",
            AnthropicWire(creds, thinking_budget=1024),
            limits=LoopLimits(),
            grants=SessionGrants(),
        )
        sink = RecordingSink()
        result = await provider.run(request(workspace), sink)
    assert result.outcome == "succeeded"
    assert sink.streamed("reasoning") == "Let me look."
    first, second = fake.api_requests("/v1/messages")
    assert first.body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assistant = second.body["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "Let me look.",
        "signature": "sig-fake",
    }
    assert assistant["content"][1]["type"] == "tool_use"
    assert assistant["content"][1]["input"] == {"path": "a.txt"}


async def test_openai_reasoning_content_is_streamed(workspace: Path) -> None:
    with make_fake("openai", [Reply(thinking="pondering", text="answer")]) as fake:
        sink = RecordingSink()
        result = await make_provider("openai", fake).run(request(workspace), sink)
    assert result.outcome == "succeeded"
    assert sink.streamed("reasoning") == "pondering" and sink.streamed() == "answer"


@pytest.mark.parametrize("family", FAMILIES)
async def test_demo_scenario_runs(family: str, workspace: Path) -> None:
    scenario = Path(__file__).resolve().parents[2] / "fakes" / "scenarios" / "native_edit_demo.json"
    with make_fake(family, Script.from_file(scenario)) as fake:
        sink = RecordingSink(answers=["allow_once"])
        result = await make_provider(family, fake).run(request(workspace), sink)
        assert fake.script.remaining() == 0
    assert result.outcome == "succeeded", result.error
    assert (workspace / "hello.txt").read_text() == "Hello from tandem!\n"
    assert sink.streamed().endswith("greets you. Ask me to change the wording any time.")
