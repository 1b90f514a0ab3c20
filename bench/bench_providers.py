"""Native provider streaming overhead: one answer of N text deltas.

Figure: wall time for a native provider turn whose answer arrives as N SSE
deltas from the local fake server (OpenAI-compatible and Anthropic), beside
its anchor measured in the same run against the same server and script: a
bare httpx + httpx-sse client that only reads and JSON-decodes the events.
The difference is what tandem's loop adds (parsing, sink calls, tool specs).
Medians over several runs. Prints JSON lines ``{"bench", "value", "unit",
"anchor", "anchor_value", "target"}``; the target is 1.5 × the anchor.

Second figure (trust boundaries): one large answer (20 MB by default) streamed from
the fake Anthropic server through the whole turn engine (a real journal, the
sink, one assistant entry), beside the same stream parsed by httpx-sse
alone; the target is 2 × the anchor. Streamed text must accumulate in linear
time: before the fix this took 223 s for 20 MB.
Run: ``.venv/bin/python bench/bench_providers.py [--deltas N] [--answer-mb M]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402
from fakes.anthropic_server import FakeAnthropic  # noqa: E402
from fakes.http_base import FakeServer  # noqa: E402
from fakes.openai_server import FakeOpenAI  # noqa: E402
from fakes.script import Reply, Script  # noqa: E402
from httpx_sse import aconnect_sse  # noqa: E402

from benchlib import emit  # noqa: E402
from tandem.adapters.sessions import new  # noqa: E402
from tandem.app import App  # noqa: E402
from tandem.checkpoints.hooks import Checkpoints  # noqa: E402
from tandem.events import NullSink  # noqa: E402
from tandem.protocol.sessions import NewParams  # noqa: E402
from tandem.providers.base import Message, PermissionRequest, TurnRequest  # noqa: E402
from tandem.providers.registry import build_provider  # noqa: E402
from tandem.turns.engine import TurnSpec  # noqa: E402


class CountingSink:
    """The cheapest possible TurnSink: counts deltas."""

    def __init__(self) -> None:
        self.deltas = 0

    def text(self, delta: str) -> None:
        self.deltas += 1

    def reasoning(self, delta: str) -> None:
        self.deltas += 1

    def end_message(self) -> None:
        pass

    def tool_call(self, *args: Any) -> None:
        pass

    def tool_result(self, *args: Any) -> None:
        pass

    def plan(self, entries: list[dict[str, Any]]) -> None:
        pass

    async def ask_permission(self, request: PermissionRequest) -> Any:
        return "reject"


async def native_ms(family: str, fake: FakeServer, root: Path) -> float:
    """One provider turn, in ms."""
    base = fake.base_url + ("/v1" if family == "openai" else "")
    provider = build_provider(
        f"{family}:bench", credentials={family: {"api_key": "k", "base_url": base}}, env={}
    )
    request = TurnRequest(
        session_id="b", turn=1, root=root, messages=[Message(role="user", text="go")]
    )
    sink = CountingSink()
    started = time.perf_counter()
    result = await provider.run(request, sink)
    elapsed = (time.perf_counter() - started) * 1000
    await provider.close()
    assert result.outcome == "succeeded", result.error
    return elapsed


async def raw_ms(family: str, fake: FakeServer) -> float:
    """The same stream read by a bare SSE client, in ms."""
    path = "/v1/chat/completions" if family == "openai" else "/v1/messages"
    body = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    started = time.perf_counter()
    async with httpx.AsyncClient() as client:
        async with aconnect_sse(client, "POST", fake.base_url + path, json=body) as source:
            async for sse in source.aiter_sse():
                if sse.data and sse.data != "[DONE]":
                    json.loads(sse.data)
    return (time.perf_counter() - started) * 1000


async def engine_ms(fake: FakeServer, home: Path, root: Path, size: int) -> float:
    """One chat turn of the turn engine whose answer is the fake's SIZE characters, in ms.

    No checkpoints (git time is not what this measures); everything else is
    the real path: provider, sink, journal entry, terminal path.
    """
    app = App(home=home, events=NullSink())
    service = app.turns
    service.engine.checkpoints = Checkpoints()
    service.config.credentials = {"anthropic": {"api_key": "k", "base_url": fake.base_url}}
    info = await new(app, NewParams(cwd=str(root)))
    started = time.perf_counter()
    turn = await service.engine.accept(TurnSpec(session=info.id, text="go",
                                                provider="anthropic:bench"))
    ended = await service.engine.wait(info.id, turn)
    elapsed = (time.perf_counter() - started) * 1000
    await service.aclose()
    app.sessions.manager.close()
    assert ended.outcome == "succeeded", ended.error
    assert len(ended.answer) == size
    return elapsed


async def large_answer(megabytes: float, chunk: int, runs: int) -> None:
    """The large-answer figure (see the module docstring)."""
    size = int(megabytes * 1_000_000)
    tmp = Path(tempfile.mkdtemp())
    root = tmp / "project"
    root.mkdir()
    with FakeAnthropic(Script(default=Reply(text="x" * size, chunk_size=chunk))) as fake:
        ours, anchor = [], []
        for n in range(runs):
            anchor.append(await raw_ms("anthropic", fake))
            ours.append(await engine_ms(fake, tmp / f"home{n}", root, size))
    a = statistics.median(anchor)
    emit(f"engine_anthropic_answer_{megabytes:g}MB_in_{chunk}_char_deltas",
         statistics.median(ours), f"httpx_sse_parse_same_{megabytes:g}MB_stream", a,
         round(2 * a, 1), digits=1)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--answer-mb", type=float, default=20.0)
    parser.add_argument("--answer-chunk", type=int, default=1000,
                        help="characters per text delta of the large answer")
    parser.add_argument("--answer-runs", type=int, default=3)
    args = parser.parse_args()
    reply = Reply(text="x" * args.deltas, chunk_size=1)
    root = Path(tempfile.mkdtemp())
    for family, server in (("openai", FakeOpenAI), ("anthropic", FakeAnthropic)):
        with server(Script(default=reply)) as fake:
            await native_ms(family, fake, root)  # warm up imports and schemas
            ours, anchor = [], []
            for _ in range(args.runs):
                anchor.append(await raw_ms(family, fake))
                ours.append(await native_ms(family, fake, root))
        a = statistics.median(anchor)
        line = {
            "bench": f"native_{family}_stream_{args.deltas}_deltas",
            "value": round(statistics.median(ours), 1),
            "unit": "ms",
            "anchor": f"bare_httpx_sse_{args.deltas}_deltas",
            "anchor_value": round(a, 1),
            "target": round(a * 1.5, 1),
        }
        print(json.dumps(line), flush=True)
    await large_answer(args.answer_mb, args.answer_chunk, args.answer_runs)


if __name__ == "__main__":
    asyncio.run(main())
