"""The project files that configure an ACP agent: which agents read which files.

An agent run in a project reads configuration of its own there (Claude Code:
``.claude/settings.json`` with its ``env`` and command hooks, the local
variant, ``.mcp.json`` with programs to start). That is workspace data like
``.tandem/settings.json``: in an untrusted project the agent starts without
it, or not at all, and a grant covers these files too (they are among
`tandem.config.shown.covered_files`, read and hashed with the settings file).
Instruction files (``CLAUDE.md``, ``AGENTS.md``) are text for the model and
are not listed: `project_instructions` reads them (regular files only,
inside the project, capped) for the native engine's system text, the
directive prompts and Claude Code's system prompt appendix. Nothing in
them is ever read as configuration.

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


@dataclass(frozen=True)
class Instruction:
    """One project instruction file as a request carries it."""

    path: str
    """Relative to the project root (``AGENTS.md``, ``sub/CLAUDE.md``)."""
    text: str
    size: int
    """Its size on disk in bytes."""
    truncated: bool

    def record(self) -> dict[str, object]:
        """What a turn's journal keeps of it: path, size, digest of the text sent (no text)."""
        return {"kind": "instructions", "path": self.path, "size": self.size,
                "sent": len(self.text.encode()), "truncated": self.truncated,
                "digest": hashlib.sha256(self.text.encode()).hexdigest()}


def read_instruction(path: Path, cap: int) -> tuple[str, int, bool] | None:
    """PATH's text (at most CAP bytes), its size, whether cut; None unless a regular file.

    The open does not follow a last symlink and never blocks (a FIFO is no file).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        data = f.read(cap + 1) if cap > 0 else b""
    cut = len(data) > cap
    return data[:cap].decode("utf-8", errors="ignore" if cut else "replace"), st.st_size, cut


def project_root(start: Path) -> Path:
    """The nearest folder at or above START that holds ``.git``; START when none does."""
    for folder in (start, *start.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return start


def project_instructions(session_root: Path, names: Sequence[str], cap: int
                         ) -> list[Instruction]:
    """NAMES found in the project root and each folder down to SESSION_ROOT, outer first.

    Each must be a regular file whose real path is inside the project root (a
    link out is left out); together they carry at most CAP bytes (the last
    one read is cut, later ones are left out).
    """
    if cap <= 0 or not names:
        return []
    start = Path(os.path.realpath(session_root))
    top = project_root(start)
    folders = [start]
    while folders[-1] != top and folders[-1] != folders[-1].parent:
        folders.append(folders[-1].parent)
    out: list[Instruction] = []
    seen: set[str] = set()
    left = cap
    for folder in reversed(folders):
        for name in names:
            path = folder / name
            real = os.path.realpath(path)
            if real in seen or not (real == str(top) or real.startswith(str(top) + os.sep)):
                continue
            seen.add(real)
            read = read_instruction(path, left)
            if read is None:
                continue
            text, size, cut = read
            out.append(Instruction(path.relative_to(top).as_posix(), text, size, cut))
            left -= len(text.encode())
            if left <= 0:
                return out
    return out


INSTRUCTIONS_HEAD = ("Project instructions: text from the project's own files, for you to "
                     "follow as guidance; they configure nothing.")


def instructions_text(items: Sequence[Instruction]) -> str:
    """ITEMS as one block of text for the model ("" when there is none)."""
    if not items:
        return ""
    parts = [INSTRUCTIONS_HEAD]
    for item in items:
        cut = " (cut)" if item.truncated else ""
        parts.append(f"### {item.path}{cut}\n{item.text.rstrip()}")
    return "\n\n".join(parts)
