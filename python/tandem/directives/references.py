"""Resolve a directive's anchor and references from disk, at send time.

The anchor's current text is read fresh from its file: when the recorded
anchor text occurs exactly once in the file, that occurrence (with its
current line numbers) is used, so a region that moved is still found;
otherwise the recorded line range is read. A missing file yields the text
recorded when the directive was made, marked as such.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tandem.protocol.directives import Anchor, Reference

MAX_SOURCE_CHARS = 100_000
"""Cap on one file's text in a prompt; the cut is said in the prompt."""


@dataclass(frozen=True)
class Source:
    """One resolved piece of source for a prompt."""

    path: str
    start_line: int | None
    end_line: int | None
    text: str
    missing: bool = False
    truncated: bool = False

    def label(self) -> str:
        """``path, lines a-b`` (or just the path for a whole file)."""
        if self.start_line is None:
            return self.path
        if self.end_line is None or self.end_line == self.start_line:
            return f"{self.path}, line {self.start_line}"
        return f"{self.path}, lines {self.start_line}-{self.end_line}"


def _inside(root: Path, rel: str) -> Path | None:
    path = (root / rel).resolve()
    try:
        path.relative_to(root.resolve())
    except ValueError:
        return None
    return path


def _read(root: Path, rel: str) -> str | None:
    path = _inside(root, rel)
    if path is None or not path.is_file():
        return None
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _cap(text: str) -> tuple[str, bool]:
    return (text[:MAX_SOURCE_CHARS], True) if len(text) > MAX_SOURCE_CHARS else (text, False)


def _lines(text: str, start: int, end: int) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[start - 1:end])


def resolve_anchor(root: Path, anchor: Anchor) -> Source:
    """The anchor's text as it is on disk now (see the module doc)."""
    content = _read(root, anchor.path)
    if content is None:
        text, cut = _cap(anchor.text)
        return Source(anchor.path, anchor.start_line, anchor.end_line, text, missing=True,
                      truncated=cut)
    start, end = anchor.start_line, anchor.end_line
    if anchor.text and content.count(anchor.text) == 1:
        start = content[:content.index(anchor.text)].count("\n") + 1
        end = start + anchor.text.rstrip("\n").count("\n")
    text, cut = _cap(_lines(content, start, end))
    return Source(anchor.path, start, end, text, truncated=cut)


def resolve_reference(root: Path, ref: Reference) -> Source:
    """A reference's text as it is on disk now (a whole file without a range)."""
    content = _read(root, ref.path)
    if content is None:
        return Source(ref.path, ref.start_line, ref.end_line, "", missing=True)
    if ref.start_line is None:
        text, cut = _cap(content)
        return Source(ref.path, None, None, text, truncated=cut)
    end = ref.end_line or ref.start_line
    text, cut = _cap(_lines(content, ref.start_line, end))
    return Source(ref.path, ref.start_line, end, text, truncated=cut)


def relative_path(root: Path, path: str) -> str:
    """PATH (absolute or relative) as a path relative to ROOT; refuses paths outside it."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ValueError(f"not a usable path: {path!r}")
    full = Path(path) if os.path.isabs(path) else root / path
    try:
        rel = full.resolve().relative_to(root.resolve())
    except ValueError:
        raise ValueError(f"{path} is outside the workspace {root}") from None
    if str(rel) == ".":
        raise ValueError(f"{path} is the workspace root, not a file")
    return rel.as_posix()
