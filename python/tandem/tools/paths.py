"""Resolve a tool's path argument inside the workspace root, refusing escapes."""

from __future__ import annotations

import os
from pathlib import Path

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
    if real != real_root and not real.is_relative_to(real_root):
        raise ToolError(f"path {path!r} is outside the workspace root {str(real_root)!r}: refused")
    return real


def display_path(root: Path, real: Path) -> str:
    """PATH relative to ROOT for messages and titles (``.`` for the root)."""
    real_root = Path(os.path.realpath(root))
    rel = real.relative_to(real_root) if real.is_relative_to(real_root) else real
    return str(rel) or "."
