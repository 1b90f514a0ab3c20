"""Read project text for a prompt at send time: one confined, capped reader.

A directive's anchor and references and a chat request's file mentions all
read through `read_text`: the path must resolve (symlinks followed) inside
the root, the file must be a regular file and not binary, and the text is
cut at a cap that the caller names. A directive's anchor is found again
when its recorded text occurs exactly once in the file, so a region that
moved is still found; otherwise the recorded line range is read. A missing
file yields the text recorded when the directive was made, marked as such.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from tandem.protocol.directives import Anchor, Reference
from tandem.tools.base import ToolError
from tandem.tools.fsread import is_binary, open_regular, read_upto
from tandem.tools.paths import display_path, inside, resolve_in_root

MAX_SOURCE_CHARS = 100_000
"""Cap on one file's text in a directive prompt; the cut is said in the prompt."""


class Refused(Exception):
    """A file that may not be read for a prompt, with the sentence saying why."""


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


def fence(text: str, info: str = "") -> str:
    """TEXT in a Markdown code fence longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{bar}{info}\n{body}{bar}"


def confined(root: Path, rel: str) -> Path:
    """The real path of REL under ROOT; `Refused` when it (or a symlink on the way) leads out."""
    try:
        return resolve_in_root(root, rel)
    except ToolError as e:
        real_root = Path(os.path.realpath(root))
        if not rel or "\0" in rel:
            raise Refused(str(e)) from None
        # Inside as written, outside once resolved: a symlink on the way leads out.
        if inside(real_root, Path(os.path.normpath(real_root / Path(rel).expanduser()))):
            raise Refused(f"{rel} is a symlink that leads outside the project {root}: "
                          "not attached") from None
        raise Refused(f"{rel} is outside the project {root}: not attached") from None


def read_text(root: Path, rel: str, max_bytes: int) -> tuple[str, int, bool]:
    """REL's text under ROOT: (text cut at MAX_BYTES, its size in bytes, whether cut).

    Raises `Refused` for a path outside ROOT, a missing or special file, a binary one.
    """
    real = confined(root, rel)
    shown = display_path(root, real)
    try:
        with open_regular(real, shown) as f:
            size = os.fstat(f.fileno()).st_size
            data = read_upto(f, max_bytes + 1)
    except ToolError as e:
        raise Refused(str(e)) from None
    except OSError as e:
        raise Refused(f"{shown}: {e.strerror or e}") from None
    if is_binary(data):
        raise Refused(f"{shown} is a binary file: not attached")
    cut = len(data) > max_bytes
    return cut_bytes(data, max_bytes).decode("utf-8", errors="replace"), size, cut


def cut_bytes(data: bytes, max_bytes: int) -> bytes:
    """DATA cut to at most MAX_BYTES without splitting a UTF-8 character."""
    if len(data) <= max_bytes:
        return data
    end = max_bytes
    while end > 0 and (data[end] & 0xC0) == 0x80:  # a continuation byte: step back
        end -= 1
    return data[:end]


ANCHOR_FILE_BYTES = 16 << 20
"""Bytes of an anchor's file searched for its recorded text."""


def _read(root: Path, rel: str) -> str | None:
    try:
        return read_text(root, rel, ANCHOR_FILE_BYTES)[0]
    except Refused:
        return None


def _cap(text: str) -> tuple[str, bool]:
    return (text[:MAX_SOURCE_CHARS], True) if len(text) > MAX_SOURCE_CHARS else (text, False)


def lines_of(text: str, start: int, end: int) -> str:
    """Lines START to END (1-based, inclusive) of TEXT."""
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
    text, cut = _cap(lines_of(content, start, end))
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
    text, cut = _cap(lines_of(content, ref.start_line, end))
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
