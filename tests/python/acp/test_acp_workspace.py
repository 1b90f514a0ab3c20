"""What an agent may read of an untrusted project's own configuration: the real
`AcpProvider` and a scripted agent process (an agent tandem cannot isolate is
never started), and the session fields the Claude Code adapter gets."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from acp_helpers import RecordingSink, chat

from tandem.providers.acp import AcpProvider
from tandem.providers.acp_workspace import session_meta

FAKE_AGENT = Path(__file__).with_name("fake_agent.py")


def test_an_agent_that_cannot_be_isolated_is_refused_before_it_runs(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / ".agent").mkdir(parents=True)
    (root / ".agent" / "config").write_text("hooks: run-anything")
    marker = tmp_path / "started"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ran')"]
    provider = AcpProvider("mine", command, {}, project_config_files=[".agent/config"],
                           project_trusted=lambda _root: False)

    async def turn() -> object:
        try:
            return await provider.run(chat(root, "hello"), RecordingSink())
        finally:
            await provider.close()

    result = asyncio.run(asyncio.wait_for(turn(), 60))
    assert result.outcome == "failed"  # type: ignore[attr-defined]
    error = result.error  # type: ignore[attr-defined]
    assert ".agent/config" in error and f"`tandem trust {root}`" in error
    assert not marker.exists()


def test_a_trusted_project_or_an_absent_file_lets_it_start(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    for trusted in (False, True):
        (root / ".agent").mkdir(exist_ok=True)
        if trusted:
            (root / ".agent" / "config").write_text("x")
        assert session_meta("mine", ["mine"], [".agent/config"], root,
                            lambda _root, t=trusted: t) == {}


def test_claude_code_gets_the_users_sources_and_still_its_instructions(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    (root / "CLAUDE.md").write_text("Run the tests with make check.")
    (root / ".claude" / "settings.json").write_text(json.dumps({"env": {"X": "1"}}))
    meta = session_meta("claude", ["npx", "@zed-industries/claude-agent-acp@0.23.1"], [],
                        root, lambda _root: False)
    assert meta["claudeCode"] == {"options": {"settingSources": ["user"]}}
    assert "Run the tests with make check." in meta["systemPrompt"]["append"]
    assert session_meta("claude", ["claude-agent-acp"], [], root, lambda _root: True) == {}
    # No trust question answered (a provider built without one) counts as untrusted.
    assert session_meta("claude", ["claude-agent-acp"], [], root, None)["claudeCode"]


def test_the_settings_entry_names_the_files_and_a_project_path_only() -> None:
    from tandem.protocol.base import TandemError
    from tandem.providers.registry import build_provider

    entry = {"command": ["mine"], "project_config_files": [".mine/config.json"]}
    provider = build_provider("acp:mine", {"acp_agents": {"mine": entry}})
    assert isinstance(provider, AcpProvider)
    assert provider.project_config_files == [".mine/config.json"]
    for bad in ("/etc/passwd", "../outside", "a//b"):
        try:
            build_provider("acp:mine", {"acp_agents": {"mine": {
                "command": ["mine"], "project_config_files": [bad]}}})
        except TandemError as exc:
            assert "project_config_files" in exc.message
        else:
            raise AssertionError(f"{bad!r} was accepted")
