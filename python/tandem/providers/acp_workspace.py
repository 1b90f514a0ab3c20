"""What an ACP agent reads of the project's own configuration, decided per ACP session.

In a project the user trusts, the agent reads its project files as it would
on its own. In an untrusted one, Claude Code starts with the user's settings
only (the adapter hands ``settingSources`` to the Claude Agent SDK, and
without the project source neither ``.claude/settings.json`` nor
``.mcp.json`` is read); an agent that cannot be told so is not started
while one of its files is there. The project's ``CLAUDE.md`` is instruction
text: it is still given to the model, as the system prompt's appendix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from tandem.config.agent_files import CLAUDE_CODE, agent_kind, present, read_instruction
from tandem.protocol.base import TandemError
from tandem.providers.acp_errors import _StartError

ProjectTrusted = Callable[[Path], bool]
"""Whether the user trusts the project at ROOT with its agent files (a grant covers them)."""

USER_SOURCES = ["user"]
"""Claude Code's setting sources in an untrusted project: the user's own only."""
INSTRUCTION_FILES = ("CLAUDE.md", ".claude/CLAUDE.md")
INSTRUCTIONS_CAP = 64 * 1024


def _instructions(root: Path) -> str:
    """ROOT's CLAUDE.md files as text for the model (regular files in ROOT only, capped)."""
    out: list[str] = []
    for rel in INSTRUCTION_FILES:
        path = root / rel
        read = read_instruction(path, INSTRUCTIONS_CAP)
        if read is None:
            continue
        text = read[0]
        out.append(f"Contents of {path} (project instructions, checked into the codebase):"
                   f"\n\n{text}")
    return "\n\n".join(out)


def session_meta(name: str, command: Sequence[str], extra_files: Sequence[str], root: Path,
                 trusted: ProjectTrusted | None) -> dict[str, object]:
    """The ``_meta`` fields of NAME's ``session/new`` (or load, resume) in ROOT.

    Raises `_StartError` for an agent that would read untrusted configuration
    it cannot be told to leave alone.
    """
    try:
        if trusted is not None and trusted(root):
            return {}
    except TandemError:  # settings that do not validate trust nothing
        pass
    kind = agent_kind(command)
    isolated = kind.files if kind is not None and kind.isolable else ()
    rest = [f for f in (*(kind.files if kind is not None else ()), *extra_files)
            if f not in isolated]
    found = present(root, rest)
    if found:
        raise _StartError(
            f"ACP agent {name} would read this project's own configuration "
            f"({', '.join(found)}), which you have not trusted: `tandem trust {root}` allows it")
    if kind is not CLAUDE_CODE:
        return {}
    meta: dict[str, object] = {"claudeCode": {"options": {"settingSources": USER_SOURCES}}}
    instructions = _instructions(root)
    if instructions:
        meta["systemPrompt"] = {"append": instructions}
    return meta
