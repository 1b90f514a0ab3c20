"""Resolve a tool's path argument inside the workspace root, refusing escapes."""

from __future__ import annotations

import os
from pathlib import Path, PurePath

from tandem.tools.base import ToolError


def resolve_in_root(root: Path, path: str) -> Path:
    """Return the real absolute path of PATH (relative to ROOT or absolute).

    Raises `ToolError` when PATH is empty, contains a NUL byte, or resolves
    (after following ``..`` and symlinks, including a symlink in a parent
    folder) to a place outside ROOT.
    """
    if not isinstance(path, str) or not path.strip():
        raise ToolError("path must be a non-empty string")
    if "\x00" in path:
        raise ToolError("path contains a NUL byte")
    real_root = Path(os.path.realpath(root))
    candidate = Path(path).expanduser() if path.startswith("~") else Path(path)
    if not candidate.is_absolute():
        candidate = real_root / candidate
    # realpath follows every symlink that exists, so a link pointing out of the
    # root (or a parent folder that is one) resolves outside and is refused.
    real = Path(os.path.realpath(candidate))
    if not inside(real_root, real):
        raise ToolError(f"path {path!r} is outside the workspace root {str(real_root)!r}: refused")
    return real


def display_path(root: Path, real: Path) -> str:
    """PATH relative to ROOT for messages and titles (``.`` for the root)."""
    real_root = Path(os.path.realpath(root))
    rel = real.relative_to(real_root) if real.is_relative_to(real_root) else real
    return str(rel) or "."


def inside(real_root: Path, real: Path) -> bool:
    """Whether the resolved path REAL is REAL_ROOT or under it."""
    return real == real_root or real.is_relative_to(real_root)


def refuse_git(root: Path, path: str, real: Path) -> None:
    """Raise `ToolError` when PATH, as given or resolved (REAL), has a ``.git`` part.

    Git runs programs named in ``.git/config`` (``core.fsmonitor``,
    ``core.hooksPath``…) and in ``.git/hooks`` on the user's next ``git``
    command, so writing there is running code: refused in every permission
    mode. Compared case-insensitively (a case-insensitive file system maps
    ``.GIT`` to ``.git``); the resolved form catches a symlink into ``.git``.
    """
    real_root = Path(os.path.realpath(root))
    parts = [*PurePath(path).parts]
    if inside(real_root, real):
        parts += real.relative_to(real_root).parts
    if any(part.casefold() == ".git" for part in parts):
        raise ToolError(
            f"{path}: refused: tools never write inside .git (git would run what its "
            "config and hooks name); change the repository with git commands instead"
        )
