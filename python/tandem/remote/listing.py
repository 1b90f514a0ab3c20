"""What a remote working dir holds, listed on the server: folders, files, content hashes.

One ``POST /api/bash/execute_bash_command`` runs `script` in the working
dir: GNU ``find`` lists every folder and regular file (symbolic links are
not followed and not listed, as the server's archive leaves them out; the
mirror's EXCLUDES are pruned), then ``sha1sum`` hashes every file up to the
per-file cap. The output is base64'd, so file names of any bytes cross the
server's text-only command output (it decodes each 8 KiB read as UTF-8 on
its own) unchanged. The mirror compares those hashes with its own
files and downloads only the ones that differ (`tandem.remote.mirror`).

The output is untrusted: `parse` refuses names that could land outside the
mirror, and anything it cannot read, as the archive unpacker does. A server
without the tools (no GNU ``find -printf``, ``sha1sum -z``, ``base64``)
lists nothing `parse` takes: the mirror then syncs from the whole archive.
"""

from __future__ import annotations

import base64
import binascii
import shlex
from dataclasses import dataclass, field

from tandem.protocol.base import TandemError
from tandem.remote.unpack import Limits, member_path, odd_name

BEGIN = "TANDEM-LISTING-BEGIN"
END = "TANDEM-LISTING-END"
UNSUPPORTED = "TANDEM-LISTING-UNSUPPORTED"


@dataclass
class Listing:
    """The server's working dir: FILES (path → (mode, size)), DIRS, HASHES (path → sha1)."""

    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    hashes: dict[str, str] = field(default_factory=dict)
    """Files up to the cap that the server could read; a file without one is not mirrored."""
    odd_names: list[str] = field(default_factory=list)
    git: bool = False
    """The working dir is a git work tree: the server's archive of it is the dir itself
    (of a dir that is not, it may be a repository below: `unpack.member_path`)."""


def _prune(excludes: tuple[str, ...]) -> str:
    """find's expression pruning EXCLUDES (bare names; a trailing ``/``: folders only)."""
    parts = []
    for raw in excludes:
        name = raw.rstrip("/")
        if "/" in name or not name:
            raise TandemError("invalid", f"not a bare exclude pattern: {raw!r}")
        test = f"-name {shlex.quote(name)}"
        parts.append(f"\\( -type d {test} \\)" if raw.endswith("/") else test)
    return "\\( " + " -o ".join(parts) + " \\) -prune"


def script(excludes: tuple[str, ...], file_cap: int) -> str:
    """The POSIX shell script that lists the working dir (the command's cwd)."""
    prune = _prune(excludes)
    # Few processes (each costs the server a fork): find without -printf shows in the
    # missing root record, sha1sum without -z in no hash at all and find's status.
    check = f"command -v base64 >/dev/null 2>&1 || {{ echo {UNSUPPORTED}; exit 0; }}"
    body = (f"find . {prune} -o \\( -type d -printf 'd\\0%P\\0' \\) "
            "-o \\( -type f -printf 'f\\0%m\\0%s\\0%P\\0' \\) ; printf 'S\\0'; "
            f"find . {prune} -o \\( -type f -size -{file_cap + 1}c -exec sha1sum -z {{}} + \\); "
            "printf 'E%s\\0' $?")
    git = "if [ -e .git ]; then printf 'G\\0'; fi; "
    return f"{check}\necho {BEGIN}\n{{ {git}{body}; }} 2>/dev/null | base64\necho {END}\n"


def _refused(why: str) -> TandemError:
    return TandemError("remote-invalid", f"The working dir's listing was refused: {why}; "
                       "nothing of it was kept")


def _name(raw: bytes, top: str, out: Listing) -> str | None:
    """RAW as a checked relative path, or None (the root, or an odd name, recorded)."""
    if not raw:
        return None
    try:
        rel = raw.decode("utf-8")
    except UnicodeDecodeError:
        out.odd_names.append(repr(raw.decode("utf-8", "surrogateescape")))
        return None
    if odd_name(rel):
        out.odd_names.append(repr(rel))
        return None
    return member_path(f"{top}/{rel}", top) or None


def decode(output: str) -> bytes | None:
    """The listing's raw records from the command's OUTPUT; None when unsupported."""
    if UNSUPPORTED in output:
        return None
    begin, end = output.find(BEGIN), output.rfind(END)
    if begin < 0 or end < begin:
        raise _refused("the server's command printed no listing")
    try:
        data = base64.b64decode("".join(output[begin + len(BEGIN):end].split()),
                                validate=True)
    except binascii.Error as e:
        raise _refused(f"it is not readable ({e})") from e
    return data


def parse(data: bytes, top: str, limits: Limits) -> Listing | None:
    """The records DATA (from `decode`) as a `Listing`, checked against LIMITS.

    None when the server's tools cannot list (no ``find -printf``: the root's
    record is missing; no ``sha1sum -z``: files but not one hash, and find failed).
    """
    fields = data.split(b"\0")
    if len(fields) < 3 or fields[-1] != b"" or not fields[-2].startswith(b"E"):
        raise _refused("it was cut short")
    status = fields[-2][1:]
    out = Listing()
    i, n = 0, len(fields) - 2
    if fields[0] == b"G":
        out.git, i = True, 1
    if fields[i:i + 2] != [b"d", b""]:
        return None
    try:
        while fields[i] != b"S":
            kind = fields[i]
            if kind == b"d":
                rel = _name(fields[i + 1], top, out)
                if rel is not None:
                    out.dirs.add(rel)
                i += 2
            elif kind == b"f":
                mode, size = int(fields[i + 1], 8), int(fields[i + 2])
                rel = _name(fields[i + 3], top, out)
                if rel is not None:
                    out.files[rel] = (mode, size)
                i += 4
            else:
                raise _refused(f"unknown record {kind[:20]!r}")
        i += 1
        while i < n:
            line = fields[i]
            digest, sep, raw = line[:40], line[40:42], line[42:]
            i += 1
            if sep not in (b"  ", b" *") or not raw.startswith(b"./"):
                raise _refused(f"unreadable hash line {fields[i - 1][:60]!r}")
            rel = _name(raw[2:], top, Listing())
            if rel is not None and rel in out.files:
                out.hashes[rel] = bytes.fromhex(digest.decode("ascii")).hex()
    except (IndexError, ValueError) as e:
        raise _refused(f"a record is malformed ({e})") from e
    if status != b"0" and not out.hashes and any(
            size <= limits.file_cap for _, size in out.files.values()):
        return None
    if len(out.files) + len(out.dirs) > limits.max_members:
        raise _refused(f"it has more than {limits.max_members} entries")
    if set(out.files) & out.dirs:
        raise _refused("a path is both a file and a folder")
    total = sum(size for _, size in out.files.values() if size <= limits.file_cap)
    if total > limits.max_unpacked_bytes:
        raise _refused(f"its files hold over {limits.max_unpacked_bytes} bytes")
    return out
