"""A hostile model streams a 100 MB tool argument to a real ``tandem serve``.

The fake model (both native wire formats) streams a ``write_file`` call whose
``content`` is 100 MB, in 64 KiB deltas. The call must fail by name with the
limit in its sentence, the journal must record the size and not the bytes
(its longest line stays in kilobytes), and the backend's peak resident memory
(``VmHWM``) must stay under 150 MB: the argument is dropped while it streams.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropic
from fakes.http_base import FakeServer
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec

from .epc_peer import Peer, start_backend
from .test_hostile_tools import Client, _stop

TOKEN = "intake-token"
HOSTILE = 100 * 1024 * 1024
"""Characters of the streamed ``content`` argument."""
RSS_CEILING_KB = 150 * 1024
LINE_CEILING = 64 * 1024
"""Bytes of the journal's longest line: the call's record, not its argument."""


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/PID/status")


def _script(chunk: int) -> list[Reply]:
    call = ToolCallSpec(id="big1", name="write_file", input={"path": "big.txt"},
                        filler=HOSTILE)
    return [Reply(tool_calls=[call], chunk_size=chunk), Reply(text="done")]


WIRES = {
    "openai": (FakeOpenAI, "/v1", "OPENAI"),
    "anthropic": (FakeAnthropic, "", "ANTHROPIC"),
}


@pytest.fixture(params=sorted(WIRES))
def served(request: pytest.FixtureRequest,
           tmp_path: Path) -> Iterator[tuple[Client, Path, str, int]]:
    kind: str = request.param
    server_cls, suffix, env = WIRES[kind]
    fake: FakeServer = server_cls(_script(64 * 1024))
    with fake:
        extra = {f"{env}_BASE_URL": fake.base_url + suffix, f"{env}_API_KEY": "sk-intake"}
        os.environ.update(extra)
        try:
            proc = start_backend(tmp_path / "home", TOKEN)
        finally:
            for k in extra:
                os.environ.pop(k, None)
        peer = Peer(proc.port)  # type: ignore[attr-defined]
        client = Client(peer)
        client.call("hello", {"token": TOKEN})
        try:
            yield client, tmp_path, kind, proc.pid
        finally:
            peer.close()
            _stop(proc)


def test_a_100_mb_tool_argument_is_refused_while_it_streams(
        served: tuple[Client, Path, str, int]) -> None:
    client, tmp, kind, pid = served
    root = tmp / "project"
    root.mkdir()
    before = _peak_rss_kb(pid)
    info = client.call("sessions/new", {"cwd": str(root)})
    journal = Path(info["path"])
    sent = client.call("turns/send", {"session": info["id"], "text": "write it",
                                      "provider": f"{kind}:m", "permission_mode": "auto-edit"})
    status = client.call("turns/wait", {"session": info["id"], "turn": sent["turn"],
                                        "timeout": 120}, timeout=130)
    peak = _peak_rss_kb(pid)
    lines = journal.read_bytes().splitlines()
    longest = max(len(line) for line in lines)
    entries = [json.loads(line) for line in lines]
    call = next(e for e in entries if e.get("type") == "tool_call")
    result = next(e for e in entries if e.get("type") == "tool_result")
    print(f"{kind}: VmHWM {before // 1024} MB before the turn, {peak // 1024} MB after; "
          f"longest journal line {longest} bytes; call input {json.dumps(call['input'])[:300]}")
    assert status["state"] == "ended", status
    assert result["status"] == "failed", result
    assert "write_file" in result["output"] and "16 MiB" in result["output"], result
    assert not (root / "big.txt").exists()
    assert longest < LINE_CEILING, f"a journal line of {longest} bytes"
    assert call["input"]["_size"] > HOSTILE, call
    assert peak < RSS_CEILING_KB, f"backend peak RSS {peak // 1024} MB"
