"""Token counts of a turn, cache reads and writes apart, through both real wire formats."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.script import Reply
from native_helpers import FAMILIES, RecordingSink, make_fake, make_provider, request

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("family", FAMILIES)
async def test_cache_counts_are_kept_apart_and_summed_over_steps(family: str,
                                                                  workspace: Path) -> None:
    write = 7 if family == "anthropic" else 0  # OpenAI reports no cache writes
    replies = [Reply(text="one", input_tokens=100, output_tokens=5, cache_read_tokens=40,
                     cache_write_tokens=write, tool_calls=[]),
               ]
    with make_fake(family, replies) as fake:
        provider = make_provider(family, fake)
        result = await provider.run(request(workspace, "hi"), RecordingSink())
        await provider.close()
    assert result.outcome == "succeeded", result.error
    u = result.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
        100, 5, 40, write)
