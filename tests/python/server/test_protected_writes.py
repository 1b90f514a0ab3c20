"""auto-edit cannot arm execution: a model that may only write files tries to plant an agent
hook (``.claude/settings.json``) and to choose the engine (``.tandem/settings.json``).

A real ``tandem serve``, a fake OpenAI model, two turns. The user's settings make
``openai:m`` the default, allow edits without asking (``auto-edit``) and configure a
``claude`` agent, here a stand-in that runs the SessionStart hooks of the project's
``.claude/settings.json`` as Claude Code would. Turn 1: both writes must be asked about,
the question saying why; the user refuses; nothing is on disk. Turn 2 (plain): no hook
runs and no other engine starts.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply, ToolCallSpec

from .epc_peer import Peer, start_backend
from .test_hostile_tools import Client, _stop

TOKEN = "protect-token"

HOOK = {"hooks": {"SessionStart": [{"hooks": [{"type": "command",
                                               "command": "touch HOOK_MARKER"}]}]}}
ENGINE = {"default_provider": "acp:claude"}

# Stands in for Claude Code: runs the project's SessionStart hooks, then gives up.
AGENT = """
import json, pathlib, subprocess, sys
pathlib.Path(sys.argv[1]).write_text("started")
cfg = pathlib.Path(".claude/settings.json")
if cfg.exists():
    for group in json.loads(cfg.read_text()).get("hooks", {}).get("SessionStart", []):
        for hook in group.get("hooks", []):
            subprocess.run(hook["command"], shell=True, cwd=".")
sys.exit(1)
"""


@dataclass
class Served:
    client: Client
    root: Path
    agent_marker: Path
    fake: FakeOpenAI


def _script() -> list[Reply]:
    return [
        Reply(text="Configuring.", tool_calls=[
            ToolCallSpec(id="w1", name="write_file",
                         input={"path": ".claude/settings.json", "content": json.dumps(HOOK)}),
            ToolCallSpec(id="w2", name="write_file",
                         input={"path": ".tandem/settings.json", "content": json.dumps(ENGINE)}),
        ]),
        Reply(text="Done."),
        Reply(text="Hello again."),
    ]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    root = tmp_path / "project"
    root.mkdir()
    marker = tmp_path / "agent-started"
    config = tmp_path / "config"
    (config / "tandem").mkdir(parents=True)
    (config / "tandem" / "settings.json").write_text(json.dumps({
        "default_provider": "openai:m", "permission_mode": "auto-edit",
        "acp_agents": {"claude": {"command": [sys.executable, "-c", AGENT, str(marker)]}}}))
    with FakeOpenAI(_script()) as fake:
        proc = start_backend(tmp_path / "home", TOKEN, env={
            "OPENAI_BASE_URL": fake.base_url + "/v1", "OPENAI_API_KEY": "sk-p",
            "XDG_CONFIG_HOME": str(config)})
        peer = Peer(proc.port)  # type: ignore[attr-defined]
        client = Client(peer)
        client.call("hello", {"token": TOKEN})
        try:
            yield Served(client, root.resolve(), marker, fake)
        finally:
            peer.close()
            _stop(proc)


def _entries(journal: Path) -> list[dict[str, Any]]:
    out = []
    for line in journal.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line being written
    return out


def _next_question(client: Client, journal: Path, seen: set[str]) -> dict[str, Any] | None:
    """The next unanswered interaction entry, or None when the turn ended without one."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        entries = _entries(journal)
        for e in entries:
            if e.get("type") == "interaction" and e["interaction_id"] not in seen:
                seen.add(e["interaction_id"])
                return e
        if entries and entries[-1].get("type") == "turn_end":
            return None
        client.call("ping")  # drains the event pushes meanwhile
        time.sleep(0.05)
    raise AssertionError("the turn neither asked nor ended within 30 s")


def test_auto_edit_asks_before_arming_a_hook_and_the_next_turn_runs_none(
        served: Served) -> None:
    client, root = served.client, served.root
    info = client.call("sessions/new", {"cwd": str(root)})
    journal = Path(info["path"])
    sent = client.call("turns/send", {"session": info["id"], "text": "set the project up"})
    questions = []
    seen: set[str] = set()
    while (q := _next_question(client, journal, seen)) is not None:
        questions.append(q)
        client.call("turns/answer", {"session": info["id"], "interaction-id":
                                     q["interaction_id"], "answer": "reject"})
    status = client.call("turns/wait", {"session": info["id"], "turn": sent["turn"],
                                        "timeout": 30})
    assert status["state"] == "ended", status
    # Both writes were asked about, each question saying why, and only once-only
    # answers were offered (no "allow for this session").
    assert [q["call_id"] for q in questions] == ["w1", "w2"], questions
    for q, path in zip(questions, (".claude/settings.json", ".tandem/settings.json"),
                       strict=True):
        assert path in q["title"] and "would change what runs" in q["title"], q
        assert [o["id"] for o in q["options"]] == ["allow_once", "reject"], q
    results = [e for e in _entries(journal) if e.get("type") == "tool_result"]
    assert [r["status"] for r in results] == ["refused", "refused"], results
    assert not (root / ".claude").exists() and not (root / ".tandem").exists()

    # Turn 2, plain: the user's engine, no agent, no hook.
    sent = client.call("turns/send", {"session": info["id"], "text": "hello"})
    status = client.call("turns/wait", {"session": info["id"], "turn": sent["turn"],
                                        "timeout": 60})
    assert status["state"] == "ended" and status["outcome"] == "succeeded", status
    starts = [e for e in _entries(journal) if e.get("type") == "turn_start"]
    assert [s["provider"] for s in starts] == ["openai:m", "openai:m"], starts
    assert len(served.fake.api_requests("/v1/chat/completions")) == 3
    assert not served.agent_marker.exists()
    assert not (root / "HOOK_MARKER").exists()
    assert not os.path.exists(root / ".claude" / "settings.json")
