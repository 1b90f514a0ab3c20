"""A directive's one-line result: what its latest surviving exchange came to.

The source overlay shows it under the directive's label, so it must be one
short, harmless line whatever the model answered: the first non-blank line
of a discussion's answer, ``3 files changed`` for a succeeded attempt, the
outcome and the first line of the error for a failed or aborted one. Only
the head of the text is looked at (a megabyte answer costs what a short one
does), control and format characters (bidi overrides, zero-width joiners,
escape sequences) are dropped, runs of white space become one space, and
the line is cut at `RESULT_CHARS`.
"""

from __future__ import annotations

import re

from tandem.directives.models import Attempt, Exchange
from tandem.protocol.directives import DirectiveResult
from tandem.sessions.titles import clean_title

RESULT_CHARS = 120
"""Longest result line, in characters (an ellipsis marks a cut)."""

HEAD_CHARS = 4_096
"""How much of an answer or error is searched for its first line."""

_ESCAPE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-_])")
"""Terminal escape sequences (CSI, OSC, two-character ones): dropped whole."""


def one_line(text: str, limit: int = RESULT_CHARS) -> str:
    """TEXT's first non-blank line, cleaned and cut to LIMIT characters ("" when none)."""
    for line in (text or "")[:HEAD_CHARS].splitlines():
        clean = clean_title(_ESCAPE.sub("", line))
        if clean:
            return clean if len(clean) <= limit else clean[:limit - 1].rstrip() + "…"
    return ""


def files_changed(attempt: Attempt) -> int:
    """How many files ATTEMPT's patch changed."""
    files = (attempt.patch or {}).get("files")
    return len(files) if isinstance(files, list) else 0


def result_of(rec: Exchange) -> DirectiveResult:
    """The one-line result of REC, an attempt or a discussion turn."""
    is_attempt = isinstance(rec, Attempt)
    files = files_changed(rec) if isinstance(rec, Attempt) else 0
    if rec.outcome != "succeeded":
        why = one_line(rec.error or "") or one_line(rec.answer) or "no reason given"
        text = one_line(f"{rec.outcome}: {why}")
    elif is_attempt:
        text = (f"{files} file{'' if files == 1 else 's'} changed" if files
                else one_line(rec.answer) or "no file changed")
    else:
        text = one_line(rec.answer) or "(empty answer)"
    return DirectiveResult(kind="attempt" if is_attempt else "discussion", seq=rec.seq,
                           outcome=rec.outcome, text=text, files=files, session=rec.session,
                           turn=rec.turn)
