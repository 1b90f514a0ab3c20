"""Tool input is bounded per model response, over both wire formats.

The bound is on the response, not on each call: three calls of 600 bytes
under a 1 KiB budget leave the first whole and fail the rest by name, and
the budget a lowered ``native.max_tool_input_bytes`` gives is the one used.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.script import Reply, ToolCallSpec
from native_helpers import FAMILIES, RecordingSink, make_fake, make_provider, request

from tandem.providers.registry import loop_limits
from tandem.providers.tool_input import INPUT_SIZE, InputBudget, StreamedInput
from tandem.tools.base import INVALID_INPUT

pytestmark = pytest.mark.anyio


def _write(i: int, size: int) -> ToolCallSpec:
    return ToolCallSpec(id=f"w{i}", name="write_file", input={"path": f"f{i}.txt"}, filler=size)


@pytest.mark.parametrize("family", FAMILIES)
async def test_the_budget_spans_the_calls_of_one_response(family: str, workspace: Path) -> None:
    calls = [_write(i, 600) for i in range(3)]
    script = [Reply(tool_calls=calls, chunk_size=100), Reply(text="ok")]
    with make_fake(family, script) as fake:
        provider = make_provider(family, fake, max_tool_input_bytes=1024)
        sink = RecordingSink()
        result = await provider.run(request(workspace, permission_mode="auto-edit"), sink)
        await provider.close()
    assert result.outcome == "succeeded", result.error
    first, *rest = sink.of("tool_result")
    assert first["status"] == "completed" and (workspace / "f0.txt").stat().st_size == 600
    for got in rest:
        assert got["status"] == "failed"
        assert got["output"].startswith("invalid arguments for write_file: the input is ")
        assert "over the 1,024-byte limit" in got["output"]
    recorded = [c["input"] for c in sink.of("tool_call")][1:]
    assert all(set(r) == {INVALID_INPUT, INPUT_SIZE} and r[INPUT_SIZE] > 600 for r in recorded)
    assert not (workspace / "f1.txt").exists()


def test_a_dropped_call_gives_its_bytes_back() -> None:
    budget = InputBudget(100)
    big, small = StreamedInput(budget), StreamedInput(budget)
    big.add('{"a": "' + "x" * 50)
    big.add("x" * 60)
    small.add('{"b": "' + "y" * 80 + '"}')
    assert big.value()[INPUT_SIZE] == 117 and small.value() == {"b": "y" * 80}


def test_the_setting_reaches_the_loop() -> None:
    assert loop_limits({"native": {"max_tool_input_bytes": 4096}}).max_tool_input_bytes == 4096
    assert loop_limits({}).max_tool_input_bytes == 16 << 20


@pytest.mark.parametrize("family", FAMILIES)
async def test_one_huge_stream_event_is_dropped_as_it_arrives(family: str,
                                                              workspace: Path) -> None:
    # The whole argument in one delta: the event itself is past the bound.
    script = [Reply(tool_calls=[_write(0, 1 << 20)], chunk_size=2 << 20), Reply(text="ok")]
    with make_fake(family, script) as fake:
        provider = make_provider(family, fake, max_tool_input_bytes=64 << 10)
        sink = RecordingSink()
        result = await provider.run(request(workspace, permission_mode="auto-edit"), sink)
        await provider.close()
    assert result.outcome == "failed"
    assert result.error is not None and "one stream event is over 196,608 bytes" in result.error
    assert not sink.of("tool_call") and not (workspace / "f0.txt").exists()
