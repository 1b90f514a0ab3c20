"""The project files that configure an ACP agent, and the digest a grant covers them by.

An agent run in a project reads configuration of its own there (Claude Code:
``.claude/settings.json`` with its ``env`` and command hooks, the local
variant, ``.mcp.json`` with programs to start). That is workspace data like
``.tandem/settings.json``: in an untrusted project the agent starts without
it, or not at all, and a grant covers these files too. Instruction files
(``CLAUDE.md``, ``AGENTS.md``) are text for the model and are not listed.

Known agents are recognised by a word of their command (as the keys an agent
gets are, `tandem.providers.acp_process`); any agent entry may name more
files with ``project_config_files`` (user or trusted layers only, as every
``acp_agents`` key).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tandem.config.model import MAX_FILE_BYTES

SETTINGS_FILE = ".tandem/settings.json"


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


def read_file(path: Path) -> bytes | str:
    """The bytes of the regular file PATH (links followed, as the agent would), or why not.

    Never blocks on a FIFO and never reads more than `MAX_FILE_BYTES` + 1.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not a regular file"
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        return f"larger than {MAX_FILE_BYTES} bytes"
    return data


def digest_of(data: bytes | str) -> str:
    """The SHA-256 of DATA as read by `read_file` (a reason stands for itself)."""
    return hashlib.sha256(data).hexdigest() if isinstance(data, bytes) else data


def combined(settings_sha: str | None, digests: Mapping[str, str]) -> str | None:
    """One digest of the settings file's and the agent files' DIGESTS (see `workspace_digest`)."""
    if not digests:
        return settings_sha
    lines = [f"{SETTINGS_FILE}\0{settings_sha or '-'}"]
    lines += [f"{rel}\0{digests[rel]}" for rel in sorted(digests)]
    return hashlib.sha256(("tandem-workspace-v1\n" + "\n".join(lines)).encode()).hexdigest()


def workspace_digest(root: str | Path, settings_sha: str | None,
                     files: Iterable[str]) -> str | None:
    """The digest a grant of ROOT is for: its settings file and the agent FILES there.

    None when there is nothing to trust. With no agent file present it is the
    settings file's own digest, so a grant made before agent files counted holds.
    """
    return combined(settings_sha, {rel: digest_of(read_file(Path(root) / rel))
                                   for rel in present(root, files)})
