"""Protected paths with ACP agents: the agent's permission requests (a real agent process,
fake_agent.py) and its ``fs/write_text_file`` requests (the client tandem answers them
with, in-process) ask in every mode, say why, and refuse in read-only turns."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import PermissionOption, ToolCallUpdate
from acp_helpers import RecordingSink, chat
from test_acp_fake_agent import Agent, _run_and_close, run

from tandem.providers.acp_client import AcpClient
from tandem.providers.acp_modes import SessionModes, wanted_mode
from tandem.providers.acp_turn import AcpTurn


def _ask(call_id: str, path: Path, title: str = "Write") -> dict[str, Any]:
    return {"ask": {"id": call_id, "title": title, "kind": "edit",
                    "input": {"file_path": str(path), "content": "{}"},
                    "write": str(path), "content": "{}"}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path.resolve()


def test_auto_edit_asks_for_a_protected_path_and_allows_the_rest(tmp_path: Path,
                                                                 root: Path) -> None:
    (root / ".claude").mkdir()
    (root / "cfg").symlink_to(root / ".claude")
    script = {"prompts": [[_ask("p1", root / "plain.txt"),
                           _ask("p2", root / ".claude" / "settings.json"),
                           _ask("p3", root / "cfg" / "settings.local.json"),
                           _ask("p4", root / ".MCP.json")]]}
    agent = Agent(tmp_path, script)
    sink = RecordingSink("reject")
    (result,) = run(_run_and_close(agent.provider(),
                                   (chat(root, "go", permission_mode="auto-edit"), sink)))
    assert result.outcome == "succeeded", result.error
    assert [a.call_id for a in sink.asked] == ["p2", "p3", "p4"]
    for asked in sink.asked:
        assert asked.once_only and "would change what runs" in asked.title, asked
    assert (root / "plain.txt").read_text() == "{}"
    assert list((root / ".claude").iterdir()) == [] and not (root / ".MCP.json").exists()
    assert [x["params"]["option"] for x in agent.log("permission-outcome")] == [
        "yes", "no", "no", "no"]


def test_a_session_allow_for_edits_does_not_reach_the_agent_nor_protected_paths(
        tmp_path: Path, root: Path) -> None:
    script = {"prompts": [[_ask("e1", root / "a.txt"), _ask("e2", root / "b.txt")],
                          [_ask("e3", root / ".envrc")]]}
    agent = Agent(tmp_path, script)
    first, second = RecordingSink("allow_session"), RecordingSink("reject")
    run(_run_and_close(agent.provider(), (chat(root, "one"), first),
                       (chat(root, "one", "ok", "two"), second)))
    # "For the session" answered e1; e2 was answered by tandem; the agent never got "always".
    assert [a.call_id for a in first.asked] == ["e1"]
    assert [x["params"]["option"] for x in agent.log("permission-outcome")] == [
        "yes", "yes", "no"]
    assert [a.call_id for a in second.asked] == ["e3"] and second.asked[0].once_only
    assert not (root / ".envrc").exists()


def test_auto_edit_keeps_the_agent_in_its_asking_mode() -> None:
    modes = SessionModes(current="default", available=["default", "acceptEdits", "plan"],
                         original="default")
    assert wanted_mode(modes, False, "auto-edit") == "default"
    assert wanted_mode(modes, False, "auto-edit", chosen="acceptEdits") == "default"
    assert wanted_mode(modes, False, "read-only") == "plan"


# -- fs/write_text_file ----------------------------------------------------------------


def _client_turn(root: Path, answer: str, **fields: Any) -> tuple[AcpClient, RecordingSink]:
    client = AcpClient()
    sink = RecordingSink(answer)  # type: ignore[arg-type]
    client.turns["s1"] = AcpTurn(chat(root, "go", **fields), sink)
    return client, sink


def _fs_write(client: AcpClient, path: str) -> str | None:
    """None when written, else the refusal's message."""
    try:
        asyncio.run(client.write_text_file("s1", path, '{"hooks": {}}'))
    except RequestError as exc:
        return str(exc.data)
    return None


@pytest.mark.parametrize("mode", ["auto-edit", "ask"])
def test_fs_write_to_a_protected_path_is_asked_and_a_refusal_leaves_nothing(
        root: Path, mode: str) -> None:
    client, sink = _client_turn(root, "reject", permission_mode=mode)
    refused = _fs_write(client, ".claude/settings.json")
    assert refused is not None and "protected path" in refused
    (asked,) = sink.asked
    assert asked.once_only and "would change what runs" in asked.title
    assert sink.of("tool_result")[0][2] == "refused"
    assert not (root / ".claude").exists()
    assert _fs_write(client, "ordinary.txt") is None and len(sink.asked) == 1


def test_fs_write_allowed_once_is_written(root: Path) -> None:
    client, sink = _client_turn(root, "allow_once", permission_mode="auto-edit")
    assert _fs_write(client, ".tandem/settings.json") is None
    assert (root / ".tandem" / "settings.json").exists() and len(sink.asked) == 1


def test_fs_write_through_a_symlink_or_in_another_case_is_caught(root: Path) -> None:
    (root / ".claude").mkdir()
    (root / "cfg").symlink_to(root / ".claude")
    client, sink = _client_turn(root, "reject", permission_mode="auto-edit")
    assert _fs_write(client, "cfg/settings.json") is not None
    assert _fs_write(client, ".CLAUDE/settings.json") is not None
    assert len(sink.asked) == 2 and list((root / ".claude").iterdir()) == []
    assert not (root / ".CLAUDE").exists()


def test_fs_write_in_a_read_only_turn_is_refused_without_asking(root: Path) -> None:
    client, sink = _client_turn(root, "allow_once", read_only=True)
    assert _fs_write(client, ".claude/settings.json") is not None
    assert sink.asked == [] and not (root / ".claude").exists()


def test_a_write_the_call_was_allowed_for_is_not_asked_twice(root: Path) -> None:
    client, sink = _client_turn(root, "allow_once", permission_mode="auto-edit")
    turn = client.turns["s1"]
    target = root / ".vscode" / "tasks.json"

    async def scenario() -> None:
        await turn.on_permission(
            ToolCallUpdate(tool_call_id="w1", title="Write", kind="edit",
                           raw_input={"file_path": str(target)}),
            [PermissionOption(option_id="y", name="Allow", kind="allow_once")])
        await client.write_text_file("s1", str(target), "{}")

    asyncio.run(scenario())
    assert target.read_text() == "{}" and [a.call_id for a in sink.asked] == ["w1"]
