"""How a projection (provider-neutral messages) is sent in each wire format."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.script import Reply
from native_helpers import FAMILIES, RecordingSink, api_path, make_fake, make_provider, request

from tandem.providers.base import Message, ToolCallRef
from tandem.providers.native import complete_tool_pairs

HISTORY = [
    Message(role="user", text="read a"),
    Message(
        role="assistant",
        text="Reading.",
        tool_calls=[ToolCallRef(id="c1", name="read_file", input={"path": "a.txt"})],
    ),
    Message(role="tool", call_id="c1", name="read_file", text="hello world"),
    Message(role="assistant", text="It says hello world."),
    Message(role="user", text="and now?"),
]


def test_complete_tool_pairs_fills_and_drops() -> None:
    msgs = [
        Message(role="user", text="go"),
        Message(
            role="assistant",
            tool_calls=[ToolCallRef(id="x", name="shell"), ToolCallRef(id="y", name="shell")],
        ),
        Message(role="tool", call_id="y", text="done"),
        Message(role="tool", call_id="zz", text="orphan"),
        Message(role="user", text="next"),
    ]
    out = complete_tool_pairs(msgs)
    assert [(m.role, m.call_id) for m in out] == [
        ("user", None),
        ("assistant", None),
        ("tool", "y"),
        ("tool", "x"),
        ("user", None),
    ]
    assert out[3].is_error and "interrupted" in out[3].text
    assert complete_tool_pairs(HISTORY) == HISTORY


@pytest.mark.anyio
@pytest.mark.parametrize("family", FAMILIES)
async def test_history_is_sent_in_wire_format(family: str, workspace: Path) -> None:
    with make_fake(family, [Reply(text="ok")]) as fake:
        result = await make_provider(family, fake).run(
            request(workspace, messages=HISTORY, system="S"), RecordingSink()
        )
    assert result.outcome == "succeeded"
    (req,) = fake.api_requests(api_path(family))
    msgs = req.body["messages"]
    if family == "openai":
        assert msgs[1:] == [
            {"role": "user", "content": "read a"},
            {
                "role": "assistant",
                "content": "Reading.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "hello world"},
            {"role": "assistant", "content": "It says hello world."},
            {"role": "user", "content": "and now?"},
        ]
    else:
        assert msgs == [
            {"role": "user", "content": [{"type": "text", "text": "read a"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading."},
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "read_file",
                        "input": {"path": "a.txt"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "c1",
                        "content": "hello world",
                        "is_error": False,
                    }
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "It says hello world."}]},
            {"role": "user", "content": [{"type": "text", "text": "and now?"}]},
        ]
