"""The project files that configure an ACP agent: which agents read which files.

An agent run in a project reads configuration of its own there (Claude Code:
``.claude/settings.json`` with its ``env`` and command hooks, the local
variant, ``.mcp.json`` with programs to start). That is workspace data like
``.tandem/settings.json``: in an untrusted project the agent starts without
it, or not at all, and a grant covers these files too (they are among
`tandem.config.shown.covered_files`, read and hashed with the settings file).
Instruction files (``CLAUDE.md``, ``AGENTS.md``) are text for the model and
are not listed.

Known agents are recognised by a word of their command (as the keys an agent
gets are, `tandem.providers.acp_process`); any agent entry may name more
files with ``project_config_files`` (user or trusted layers only, as every
``acp_agents`` key).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class AgentKind:
    """An agent program tandem knows: its project files and whether it can ignore them."""

    name: str
    programs: tuple[str, ...]
    files: tuple[str, ...]
    isolable: bool
    """tandem can start it without the project's files (else: refused while untrusted)."""


CLAUDE_CODE = AgentKind(
    "Claude Code", ("claude-agent-acp", "claude-code-acp"),
    (".claude/settings.json", ".claude/settings.local.json", ".mcp.json"), True)
KINDS: tuple[AgentKind, ...] = (
    CLAUDE_CODE,
    AgentKind("Codex", ("codex-acp",), (".codex/config.toml",), False),
    AgentKind("Gemini CLI", ("gemini",), (".gemini/settings.json", ".gemini/.env"), False),
)


def _program(word: str) -> str:
    base = word.rstrip("/").rsplit("/", 1)[-1]
    return base.split("@", 1)[0] if not base.startswith("@") else base


def agent_kind(command: Sequence[str]) -> AgentKind | None:
    """The known agent COMMAND runs: its program, or a word naming it.

    (``npx @zed-industries/claude-agent-acp@0.23.1`` runs Claude Code.)
    """
    for word in command:
        name = _program(word)
        for kind in KINDS:
            if name in kind.programs:
                return kind
    return None


def listed_files(agents: Mapping[str, Any] | None) -> list[str]:
    """Every agent file a grant covers: the known agents' and each entry's own list."""
    out = {f for kind in KINDS for f in kind.files}
    for entry in (agents or {}).values():
        extra = entry.get("project_config_files") if isinstance(entry, Mapping) else None
        if isinstance(extra, list):
            out.update(f for f in extra if isinstance(f, str))
    return sorted(out)


def present(root: str | Path, files: Iterable[str]) -> list[str]:
    """Those of FILES (relative to ROOT) that exist (a dangling link counts)."""
    return [rel for rel in files if os.path.lexists(Path(root) / rel)]
