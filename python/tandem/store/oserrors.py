"""One sentence for a failed disk operation: what kind of failure, what it stopped, where.

A full disk or a read-only ``TANDEM_HOME`` is the user's to fix, so they get
a sentence that starts with the kind ("disk full: …") and names the file,
never a traceback. Used by the journal writer and the CLI's last resort.
"""

from __future__ import annotations

import errno

from tandem.protocol.base import TandemError

_KINDS = {
    errno.ENOSPC: "disk full",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EIO: "I/O error",
    errno.EFBIG: "file too large",
}


def kind_of(exc: OSError) -> str:
    """The short name of EXC's kind of failure ("disk full", "read-only file system" …)."""
    return _KINDS.get(exc.errno or 0, "cannot write")


def describe(exc: OSError, doing: str) -> str:
    """One sentence: EXC's kind, then DOING (e.g. "cannot append to /x.jsonl"), then why."""
    reason = exc.strerror or str(exc)
    where = f" ({exc.filename})" if exc.filename and str(exc.filename) not in doing else ""
    return f"{kind_of(exc)}: {doing}{where}: {reason}"


def io_error(exc: OSError, doing: str) -> TandemError:
    """EXC as an ``io`` `TandemError` carrying `describe`'s sentence."""
    return TandemError("io", describe(exc, doing))
