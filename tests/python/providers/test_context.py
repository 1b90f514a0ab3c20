"""How a projection (provider-neutral messages) is sent in each wire format."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.script import Reply
from native_helpers import FAMILIES, RecordingSink, api_path, make_fake, make_provider, request

from tandem.providers.base import Message, ToolCallRef
from tandem.providers.wire_context import complete_tool_pairs

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
        Message(role="tool", call_id="y", text="late duplicate"),
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
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}}
                ],
            },
        ]


def test_anthropic_history_ids_are_made_safe() -> None:
    from tandem.providers.anthropic import AnthropicWire
    from tandem.providers.credentials import resolve_credentials

    wire = AnthropicWire(resolve_credentials("anthropic", api_key="k", env={}))
    msgs = wire.initial_messages(
        [
            Message(role="user", text="go"),
            Message(role="assistant", tool_calls=[ToolCallRef(id="acp:1/x", name="mcp.write")]),
            Message(role="tool", call_id="acp:1/x", text="ok"),
        ]
    )
    assert msgs[1]["content"][0]["id"] == "acp_1_x"
    assert msgs[1]["content"][0]["name"] == "mcp_write"
    assert msgs[2]["content"][0]["tool_use_id"] == "acp_1_x"


def test_parse_retry_after_forms() -> None:
    import email.utils
    import time

    import httpx

    from tandem.providers.native import parse_retry_after

    assert parse_retry_after(httpx.Headers({"retry-after": "2"})) == 2.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (parse_retry_after(httpx.Headers({"retry-after": date})) or 0) <= 30
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert parse_retry_after(httpx.Headers({})) is None
