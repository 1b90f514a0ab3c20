"""The system calls an open journal writes through, in one object tests can replace.

A full disk or a read-only file system cannot be produced on demand on every
machine; a `JournalIO` subclass that raises ``OSError(ENOSPC)`` can.
"""

from __future__ import annotations

import os


class JournalIO:
    """The system calls an open journal writes through: a seam for disk-fault tests."""

    def write(self, fd: int, data: bytes) -> int:
        """Write DATA to FD in one call; return the bytes written."""
        return os.write(fd, data)

    def fsync(self, fd: int) -> None:
        """Flush FD to disk."""
        os.fsync(fd)

    def truncate(self, fd: int, length: int) -> None:
        """Cut FD back to LENGTH bytes."""
        os.ftruncate(fd, length)
