"""The ``@`` mentions of a chat request, resolved when it is sent.

A mention is ``@`` and a token at the start of a word: ``@D3`` (a
directive), ``@T12`` (a turn of the session), or a path of the project,
optionally with a line range (``@src/a.py#L10-24``, what a symbol's
completion inserts). A token naming no file is plain text (``@dataclass``),
so only what exists is attached; a file that exists but may not be read (a
path or symlink leading out of the project, a binary or special file), an
unknown directive or turn, or mentions over the total cap refuse the whole
request before anything is sent, with a sentence saying which and why.

What a request attaches is one block of text for the model (`Attached.text`)
and, for the journal and the view, one record per mention: kind, path,
size, bytes sent, digest, whether cut. The text is journaled once, beside
the request (the model's later requests need it); the records hold none.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tandem.config.model import MentionSettings
from tandem.editor import EditorError
from tandem.mentions.sources import (
    ANCHOR_FILE_BYTES,
    Refused,
    confined,
    cut_bytes,
    fence,
    lines_of,
    read_text,
)
from tandem.protocol.base import TandemError
from tandem.tools.paths import display_path

MENTION = re.compile(r"(?<![\w@.])@([^\s`'\"<>()\[\]{}]+)")
DIRECTIVE = re.compile(r"D[1-9][0-9]{0,8}")
TURN = re.compile(r"T[1-9][0-9]{0,8}")
RANGE = re.compile(r"(.+)#L([1-9][0-9]{0,8})(?:-L?([1-9][0-9]{0,8}))?")
TRAILING = ".,;:!?"
MAX_MENTIONS = 64
"""Mentions one request may carry."""

BufferText = Callable[[Path], Awaitable[str | None]]
"""The text of the editor's buffer visiting a file (None: no buffer), as `EditorBridge`."""
DirectiveText = Callable[[str], str]
"""A directive's text by id; raises `TandemError` (``not-found``) for an unknown one."""
TurnText = Callable[[int], str | None]
"""A turn's request and answer by number; None when the session has no such turn."""


@dataclass(frozen=True)
class Mention:
    """One mention as written: its token (without ``@``) and what it names."""

    token: str
    kind: Literal["file", "directive", "turn"]
    path: str = ""
    start_line: int | None = None
    end_line: int | None = None


@dataclass
class Attached:
    """What a request's mentions attach: text for the model, a record per mention."""

    text: str = ""
    records: list[dict[str, object]] = field(default_factory=list)


def parse(text: str, root: Path) -> list[Mention]:
    """The mentions in TEXT, each once, in order; a path naming nothing is no mention."""
    out: list[Mention] = []
    seen: set[str] = set()
    for m in MENTION.finditer(text):
        token = m.group(1).rstrip(TRAILING)
        if not token or token in seen:
            continue
        if DIRECTIVE.fullmatch(token):
            mention = Mention(token, "directive")
        elif TURN.fullmatch(token):
            mention = Mention(token, "turn")
        else:
            path, start, end = token, None, None
            ranged = RANGE.fullmatch(token)
            if ranged:
                path, start = ranged.group(1), int(ranged.group(2))
                end = int(ranged.group(3)) if ranged.group(3) else start
            if "\0" in path or not os.path.lexists(root / os.path.expanduser(path)):
                continue
            mention = Mention(token, "file", path, start, min(end, start + 1_000_000)
                              if end is not None and start is not None and end >= start
                              else start)
        seen.add(token)
        out.append(mention)
    return out


async def resolve(text: str, root: Path, limits: MentionSettings, *,
                  buffer_text: BufferText | None = None,
                  directive_text: DirectiveText | None = None,
                  turn_text: TurnText | None = None) -> Attached:
    """Resolve the mentions of TEXT under ROOT within LIMITS (see the module doc).

    Raises `TandemError` (``invalid`` or ``not-found``) naming the mention
    that cannot be attached; then nothing is sent.
    """
    mentions = parse(text, root)
    if len(mentions) > MAX_MENTIONS:
        raise TandemError("invalid", f"The request mentions {len(mentions)} things; at most "
                                     f"{MAX_MENTIONS} can be attached: nothing was sent")
    out = Attached()
    parts: list[str] = []
    total = 0
    for mention in mentions:
        try:
            label, body, size, path = await _one(mention, root, limits.max_bytes,
                                                 buffer_text, directive_text, turn_text)
        except Refused as e:
            raise TandemError("invalid", f"@{mention.token}: {e}; nothing was sent") from None
        data = body.encode()
        cut = len(data) > limits.max_bytes
        if cut:
            body = cut_bytes(data, limits.max_bytes).decode("utf-8", errors="ignore")
            data = body.encode()
        total += len(data)
        if total > limits.total_bytes:
            raise TandemError("invalid", f"The mentions of this request come to more than "
                                         f"{limits.total_bytes:,} bytes, the limit on one "
                                         "request's mentions (mentions.total_bytes): nothing "
                                         "was sent")
        note = f", cut at {limits.max_bytes:,} bytes" if cut else ""
        parts.append(f"### @{mention.token} ({label}, {size:,} bytes{note})\n"
                     + (fence(body) if mention.kind == "file" else body.rstrip()))
        record: dict[str, object] = {
            "kind": mention.kind, "mention": mention.token, "size": size,
            "sent": len(data), "truncated": cut,
            "digest": hashlib.sha256(data).hexdigest()}
        if path is not None:
            record["path"] = path
            if mention.start_line is not None:
                record["lines"] = [mention.start_line, mention.end_line]
        out.records.append(record)
    if parts:
        out.text = ("Mentioned in this request (attached by tandem as it was sent):\n\n"
                    + "\n\n".join(parts))
    return out


async def _one(mention: Mention, root: Path, cap: int, buffer_text: BufferText | None,
               directive_text: DirectiveText | None, turn_text: TurnText | None
               ) -> tuple[str, str, int, str | None]:
    """(label, text, size in bytes, path) of MENTION, a whole file read up to CAP bytes.

    Raises `Refused` or `TandemError`.
    """
    if mention.kind == "directive":
        if directive_text is None:
            raise Refused("directives cannot be mentioned here")
        body = directive_text(mention.token)
        return f"directive {mention.token}", body, len(body.encode()), None
    if mention.kind == "turn":
        number = int(mention.token[1:])
        found = turn_text(number) if turn_text is not None else None
        if found is None:
            raise TandemError("not-found", f"@{mention.token}: this session has no turn "
                                           f"{number}; nothing was sent")
        return f"turn {number}", found, len(found.encode()), None
    real = confined(root, mention.path)
    shown = display_path(root, real)
    buffered: str | None = None
    if buffer_text is not None and os.path.isfile(real):
        try:
            buffered = await buffer_text(real)
        except EditorError:
            buffered = None  # the editor failed to answer: the file on disk
    if buffered is not None:
        if "\0" in buffered[:8192]:
            raise Refused(f"{shown} is a binary file: not attached")
        content, size = buffered, len(buffered.encode())
    else:
        whole = mention.start_line is None
        content, size, _cut = read_text(root, mention.path, cap + 1 if whole
                                        else ANCHOR_FILE_BYTES)
    if mention.start_line is None:
        return f"file {shown}", content, size, shown
    end = mention.end_line or mention.start_line
    piece = lines_of(content, mention.start_line, end)
    return (f"file {shown}, lines {mention.start_line}-{end}", piece, len(piece.encode()),
            shown)
