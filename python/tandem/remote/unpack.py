"""Unpack an agent-server's ``tar.gz`` workspace archive into a fresh folder, safely.

The archive is untrusted input (a compromised or hostile server, a proxy).
`unpack_archive` writes only regular files and directories, only below its
destination, and refuses the whole archive (raising before it returns, the
destination then to be thrown away by the caller) when a member is a link or
a special file, has an absolute name, a ``..`` or a control character, lies
outside the one top folder the server puts every member in, appears twice,
or when the archive goes over the member, byte or decompression caps. It
never follows a link: it creates none, and opens every file with
``O_NOFOLLOW | O_EXCL`` in folders it created itself.

A member larger than the checkpoint size cap is not unpacked: a sparse
placeholder of its size stands in for it, so the checkpointer names it a
``too-large`` gap (as it does for a local file) instead of seeing it deleted.
"""

from __future__ import annotations

import gzip
import json
import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tandem.protocol.base import TandemError

MANIFEST = "archive_manifest.json"
"""The member the server appends to every tar.gz (file count, bytes, excludes)."""


@dataclass(frozen=True)
class Limits:
    """Caps on one archive: download bytes, members, unpacked bytes, one file's size."""

    max_archive_bytes: int = 512 * 1024 * 1024
    max_members: int = 100_000
    max_unpacked_bytes: int = 2 * 1024 * 1024 * 1024
    file_cap: int = 10 * 1024 * 1024
    """Files above this become placeholders (the checkpointer's size cap)."""


@dataclass
class Unpacked:
    """What `unpack_archive` wrote: FILES (relative POSIX paths), DIRS, the too-large ones."""

    files: dict[str, int] = field(default_factory=dict)
    """Every file and its size (placeholders included)."""
    dirs: set[str] = field(default_factory=set)
    too_large: list[str] = field(default_factory=list)
    odd_names: list[str] = field(default_factory=list)
    """Members skipped for their name (`odd_name`), as ``repr`` strings."""
    manifest: dict[str, object] | None = None


class _Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


class _Capped:
    """A read-only stream that refuses to yield more than LIMIT bytes (a gzip bomb)."""

    def __init__(self, raw: _Readable, limit: int, what: str) -> None:
        self._raw = raw
        self._left = limit
        self._what = what

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        self._left -= len(data)
        if self._left < 0:
            raise _refused(f"{self._what} unpacks to more bytes than allowed")
        return data


def _refused(why: str) -> TandemError:
    return TandemError("remote-invalid", f"The workspace archive was refused: {why}; "
                       "nothing of it was kept")


def member_path(name: str, top: str) -> str:
    """The path of archive member NAME relative to its top folder TOP ('' for TOP itself).

    Raises `TandemError` (``remote-invalid``) for a name that could land
    anywhere but under the destination.
    """
    if not name or name.startswith(("/", "\\")):
        raise _refused(f"member {name!r} has an absolute name")
    parts = name.rstrip("/").split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise _refused(f"member {name!r} has an empty, '.' or '..' component")
    if parts[0] != top:
        raise _refused(f"member {name!r} is not inside the archived folder {top!r} (a working "
                       "dir that is not a git repository but holds exactly one, up to three "
                       "levels down, is archived as that repository by the server: make the "
                       "working dir a repository (git init) or attach to the repository)")
    return "/".join(parts[1:])


def odd_name(rel: str) -> bool:
    """True for a name tandem does not mirror: a control character (a newline…) in it.

    Such a file is legal on the server; it is skipped and named, not refused,
    so one odd name does not stop every later checkpoint.
    """
    return any(ord(c) < 32 or c == "\x7f" for c in rel)


def _is_manifest(member: tarfile.TarInfo, rel: str, data: bytes) -> dict[str, object] | None:
    """The server's synthetic manifest (mtime 0, its JSON keys), else None (a user's file)."""
    if rel != MANIFEST or member.mtime != 0:
        return None
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if isinstance(body, dict) and body.get("format") == "tar.gz" and "file_count" in body:
        return body
    return None


def _mkdirs(dest: Path, rel: str, out: Unpacked) -> None:
    """Create DEST/REL and its parents as real folders (refusing a file in the way)."""
    path = dest
    parts = rel.split("/") if rel else []
    for i, part in enumerate(parts):
        path = path / part
        sub = "/".join(parts[: i + 1])
        if sub in out.files:
            raise _refused(f"{sub!r} is both a file and a folder")
        if sub not in out.dirs:
            os.mkdir(path, 0o700)
            out.dirs.add(sub)


def _write(dest: Path, rel: str, member: tarfile.TarInfo, src: _Readable | None,
           placeholder: bool) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    # Keep the execute bits (the checkpointer records modes); never setuid/setgid.
    mode = 0o700 if member.mode & 0o111 else 0o600
    fd = os.open(dest / rel, flags, mode)
    with os.fdopen(fd, "wb") as f:
        if placeholder:
            f.truncate(member.size)  # sparse: no disk used, lstat shows the size
        elif src is not None:
            while chunk := src.read(1024 * 1024):
                f.write(chunk)
    os.utime(dest / rel, (member.mtime, member.mtime), follow_symlinks=False)


def unpack_archive(archive: Path, dest: Path, top: str, limits: Limits) -> Unpacked:
    """Unpack the tar.gz ARCHIVE, whose members all live under folder TOP, into DEST.

    DEST must be an empty folder the caller made; on any refusal the caller
    removes it (what was written stays inside it).
    """
    out = Unpacked()
    total = 0
    members = 0
    try:
        with open(archive, "rb") as raw, gzip.GzipFile(fileobj=raw) as unzipped:
            # Headers and pax records count too: 1 MiB of slack per 1,000 members.
            capped = _Capped(unzipped, limits.max_unpacked_bytes + 1024 * limits.max_members
                             + (1 << 20), "the archive")
            with tarfile.open(fileobj=capped, mode="r|") as tar:  # type: ignore[call-overload]
                for member in tar:
                    members += 1
                    if members > limits.max_members:
                        raise _refused(f"it has more than {limits.max_members} members")
                    rel = member_path(member.name, top)
                    if odd_name(rel):
                        out.odd_names.append(repr(rel))
                        continue
                    if member.isdir():
                        if rel in out.files:
                            raise _refused(f"{rel!r} is both a file and a folder")
                        _mkdirs(dest, rel, out)
                        continue
                    if not member.isreg():
                        raise _refused(f"member {member.name!r} is a link or a special file")
                    if not rel:
                        raise _refused("the archived folder itself is a file")
                    if rel in out.files or rel in out.dirs:
                        raise _refused(f"member {rel!r} appears twice")
                    total += member.size
                    if total > limits.max_unpacked_bytes:
                        raise _refused(f"it unpacks to over {limits.max_unpacked_bytes} bytes")
                    parent = rel.rpartition("/")[0]
                    _mkdirs(dest, parent, out)
                    src: _Readable | None = tar.extractfile(member)
                    if rel == MANIFEST and member.size < 1 << 20 and src is not None:
                        data = src.read()
                        manifest = _is_manifest(member, rel, data)
                        if manifest is not None:
                            out.manifest = manifest
                            continue
                        src = _Bytes(data)
                    large = member.size > limits.file_cap
                    _write(dest, rel, member, src, placeholder=large)
                    out.files[rel] = member.size
                    if large:
                        out.too_large.append(rel)
    except (tarfile.TarError, EOFError, gzip.BadGzipFile, OSError, ValueError) as e:
        if isinstance(e, TandemError):
            raise
        raise _refused(f"it is not a readable tar.gz ({e})") from e
    return out


class _Bytes:
    """Bytes already read, as a stream for `_write`."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self, n: int = -1) -> bytes:
        chunk, self._data = (self._data, b"") if n < 0 else (self._data[:n], self._data[n:])
        return chunk
