"""Session titles: a short name from the first request, and the user's own.

A session is named by its first chat request (``name_untitled``), so the
sessions overview and the pickers show something a person recognises; the
user renames it with ``sessions/rename`` (``M-x tandem-rename-session``).
Both are written to the journal's header, which every listing reads.
Titles are cleaned the same way either way: one line, no control or
bidi-format characters, at most `TITLE_CHARS` characters.
"""

from __future__ import annotations

import logging
import re
import unicodedata

from tandem.protocol.base import TandemError
from tandem.store.journal import Journal

TITLE_CHARS = 60
"""Longest title taken from a request (a longer first line is cut at a word)."""
MAX_TITLE_CHARS = 200
"""Longest title a user may give."""

log = logging.getLogger(__name__)

_MARKUP = re.compile(r"^(?:#{1,6}\s+|[-*+>]\s+|\d+[.)]\s+|`{3,}\S*\s*)+")


def clean_title(text: str) -> str:
    """TEXT as one line: control and format characters dropped, spaces collapsed."""
    kept = "".join(" " if ch.isspace() else ch for ch in text
                   if ch.isspace() or unicodedata.category(ch)[0] != "C")
    return " ".join(kept.split())


def title_from_request(text: str) -> str:
    """A short title for a session whose first request is TEXT ("" when there is none).

    The first line with words in it, Markdown marks at its start dropped,
    cut at a word boundary to `TITLE_CHARS` characters with an ellipsis.
    """
    for raw in text[:10_000].splitlines():
        line = clean_title(_MARKUP.sub("", raw.strip()))
        if any(ch.isalnum() for ch in line):
            break
    else:
        return ""
    if len(line) <= TITLE_CHARS:
        return line
    cut = line[: TITLE_CHARS - 1]
    space = cut.rfind(" ")
    if space >= TITLE_CHARS // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def user_title(text: str) -> str:
    """TEXT as a title the user gave; ``invalid`` when nothing is left of it."""
    title = clean_title(text)
    if not title:
        raise TandemError("invalid", "A title needs at least one visible character")
    if len(title) > MAX_TITLE_CHARS:
        raise TandemError("invalid", f"A title is at most {MAX_TITLE_CHARS} characters, "
                          f"not {len(title)}")
    return title


def name_untitled(journal: Journal, request: str) -> None:
    """Title JOURNAL's session from REQUEST if it has no title yet.

    Best effort: a header that cannot be rewritten (a full disk) leaves the
    session untitled, never the turn refused.
    """
    if journal.header.title or not journal.writable:
        return
    title = title_from_request(request)
    if not title:
        return
    try:
        journal.update_header(title=title)
    except TandemError as exc:
        log.warning("session %s stays untitled: %s", journal.id, exc.message)
