"""Open and read workspace files safely: regular files only, bounded, never blocking.

A hostile tree may hold a FIFO (opening it blocks until a writer comes), a
socket, or a device such as ``/dev/zero`` (a read never ends). Such a file
is named and skipped, never read: its type is checked before the open, the
open is non-blocking and does not follow a last-moment symlink, and the
open descriptor is checked again (the name may have changed in between).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from tandem.tools.base import ToolError

BINARY_SNIFF = 8192
"""Leading bytes looked at for a NUL byte to call a file binary."""
CHUNK = 1 << 20
"""Bytes read at a time."""


def special_kind(mode: int) -> str | None:
    """What a file of MODE is when it is not a regular file (None when it is)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


def not_regular(shown: str, kind: str) -> ToolError:
    """The error for SHOWN being a KIND instead of a regular file."""
    return ToolError(f"{shown}: a {kind}, not a regular file; not opened")


def open_regular(real: Path, shown: str) -> BinaryIO:
    """Open the already confined path REAL for reading; refuse anything but a regular file.

    The file is unbuffered: its reads release the GIL for their whole length,
    so a worker reading a huge file does not slow the event loop down.
    """
    try:
        kind = special_kind(os.stat(real).st_mode)
    except FileNotFoundError:
        raise ToolError(f"{shown}: no such file") from None
    if kind:
        raise not_regular(shown, kind)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(real, flags)
    try:
        kind = special_kind(os.fstat(fd).st_mode)
        if kind:
            raise not_regular(shown, kind)
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def read_upto(f: BinaryIO, size: int) -> bytes:
    """Up to SIZE bytes of F (fewer only at the end of the file)."""
    parts: list[bytes] = []
    while size > 0:
        chunk = f.read(min(size, CHUNK))
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def is_binary(head: bytes) -> bool:
    """Whether HEAD (a file's first bytes) looks binary: it holds a NUL byte."""
    return b"\x00" in head[:BINARY_SNIFF]


def iter_lines(f: BinaryIO, max_line: int, head: bytes = b"") -> Iterator[tuple[bytes, bool]]:
    """Lines of F (after the bytes HEAD already read from it), at most MAX_LINE bytes each.

    Yields ``(line, truncated)`` without the end of line; the rest of a longer
    line is read in chunks and dropped, so memory stays bounded whatever the
    file holds.
    """
    buf = head
    kept: bytes | None = None  # the shown start of an over-long line being skipped
    while True:
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            if kept is not None:
                yield kept, True
                kept = None
            else:
                line = buf[start:nl]
                if len(line) > max_line:
                    yield line[:max_line], True
                else:
                    yield line.removesuffix(b"\r"), False
            start = nl + 1
        rest = buf[start:]
        if kept is None and len(rest) > max_line:
            kept, rest = rest[:max_line], b""
        elif kept is not None:
            rest = b""
        chunk = f.read(CHUNK)
        if not chunk:
            if kept is not None:
                yield kept, True
            elif rest:
                yield rest.removesuffix(b"\r"), False
            return
        buf = rest + chunk
