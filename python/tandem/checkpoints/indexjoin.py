"""Join git index files of disjoint, ordered path ranges into one (a first capture on two cores).

A first capture of a large tree hashes every file through ``update-index``,
one process at a time: git has no parallel hashing, so one core idles. Two
processes can each hash half of the paths into an index file of its own
(`add_halves`); the halves are consecutive ranges of the sorted paths, so
the joined index is the first file's entries followed by the second's,
which is what git itself would have written, stat data included, so the
next capture reads none of those files again.

Only what git writes for a new index with ``index.version=2`` and no
split index is read (format: git's ``Documentation/gitformat-index.txt``):
a ``DIRC`` header, the entries, optional extensions, a SHA-1 trailer.
Extensions are dropped (a new index carries none that matter: the cache
tree is rebuilt by ``write-tree``). Anything else is refused with
`IndexFormatError`, and the caller hashes into one index as before.

Racy entries: git trusts an entry's stat data only when the file's mtime
is older than the index file's. The joined file gets the oldest mtime of
its parts (``os.utime``), so an entry that was racy in its part is racy in
the whole, and its content is compared at the next capture.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

from tandem.store import fsutil

_HEADER = struct.Struct(">4sLL")
_ENTRY_FIXED = 62  # ten 32-bit stat fields, the object id, the flags
_EXTENDED = 0x4000
_NAME_MASK = 0x0FFF


class IndexFormatError(ValueError):
    """An index file this module does not read (version, a split index, a bad checksum)."""


def entries(data: bytes) -> tuple[int, int, bytes, bytes, bytes]:
    """(version, count, raw entries, first path, last path) of the index bytes DATA."""
    if len(data) < _HEADER.size + 20 or hashlib.sha1(data[:-20]).digest() != data[-20:]:
        raise IndexFormatError("index checksum does not match")
    signature, version, count = _HEADER.unpack_from(data)
    if signature != b"DIRC" or version not in (2, 3):
        raise IndexFormatError(f"index version {version} is not read here")
    pos = _HEADER.size
    first = last = b""
    for i in range(count):
        flags = struct.unpack_from(">H", data, pos + 60)[0]
        start = pos + _ENTRY_FIXED + (2 if version == 3 and flags & _EXTENDED else 0)
        end = data.index(b"\0", start)
        name = data[start:end]
        if flags & _NAME_MASK != min(len(name), _NAME_MASK):
            raise IndexFormatError("index entry name length does not match")
        if i == 0:
            first = name
        last = name
        # Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
        pos += ((end - pos) // 8 + 1) * 8
    return version, count, data[_HEADER.size : pos], first, last


def join(parts: list[Path], dest: Path) -> None:
    """Write DEST: PARTS' entries in order (each part's paths sort after the one before's)."""
    total = 0
    version = 2
    chunks: list[bytes] = []
    previous: bytes | None = None
    oldest: int | None = None
    for part in parts:
        part_version, count, raw, first, last = entries(part.read_bytes())
        if count == 0:
            continue
        version = max(version, part_version)
        if previous is not None and not previous < first:
            raise IndexFormatError("index parts overlap or are out of order")
        previous = last
        total += count
        chunks.append(raw)
        mtime = part.stat().st_mtime_ns
        oldest = mtime if oldest is None else min(oldest, mtime)
    body = _HEADER.pack(b"DIRC", version, total) + b"".join(chunks)
    fsutil.atomic_write(dest, body + hashlib.sha1(body).digest())
    if oldest is not None:
        os.utime(dest, ns=(oldest, oldest))
