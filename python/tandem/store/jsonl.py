"""Line-level file helpers of a journal: encode a line, read the header, find the tail.

Shared by `tandem.store.journal` (the open journal) and the relocation code
(header rewrites of a closed journal).
"""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from pydantic import ValidationError

from tandem.protocol.base import TandemError
from tandem.store import fsutil
from tandem.store.models import Header

_TAIL_CHUNK = 8192


def now_iso() -> str:
    """Current UTC time, ISO 8601 with milliseconds and ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def dumps_line(data: dict[str, object]) -> bytes:
    """DATA as one JSON line (UTF-8 bytes, newline-terminated).

    Raises ValueError for a non-finite number (NaN, ±Infinity): JSON has
    none, and a line holding one would be refused by every strict reader.
    """
    # json escapes newlines inside strings, so the result is exactly one line;
    # U+2028/U+2029 are escaped too, for readers that split on every line break.
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return (text + "\n").encode("utf-8")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} (not JSON)")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e999 parses as infinity
        raise ValueError(f"non-finite number {text[:40]} (out of range)")
    return value


_STRICT = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


_FAST = msgspec.json.Decoder()


def loads_line(line: bytes | str) -> Any:
    """Parse one JSON line strictly: NaN, ±Infinity and overflowing floats are a ValueError.

    Python's json accepts them, but they are not JSON: a line holding one is
    garbled and is set aside like any other unreadable line.
    """
    try:
        # msgspec refuses what the strict json decoder refuses; it also refuses
        # a lone surrogate escape (json reads it), so a refusal is re-checked.
        return _FAST.decode(line)
    except msgspec.DecodeError:
        pass
    text = line.decode("utf-8") if isinstance(line, bytes) else line
    return _STRICT.decode(text.strip())


def read_header(path: Path) -> tuple[Header, int]:
    """Parse the header line of the journal at PATH; also return its byte length."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise TandemError("not-found", f"No session journal at {path}") from None
    except OSError as exc:
        raise TandemError("io", f"Cannot read {path}: {exc.strerror}") from None
    try:
        buf = b""
        while b"\n" not in buf:
            chunk = os.pread(fd, 65536, len(buf))
            if not chunk:
                break
            buf += chunk
    finally:
        os.close(fd)
    line, nl, _ = buf.partition(b"\n")
    if not nl:
        raise TandemError("corrupt", f"{path} has no complete header line")
    try:
        header = Header.model_validate(loads_line(line))
    except ValidationError as exc:
        raise TandemError("corrupt", f"{path}: invalid header: {exc.errors()[0]['msg']}") from None
    except ValueError as exc:
        raise TandemError("corrupt", f"{path}: unreadable header: {exc}") from None
    return header, len(line) + 1


def last_complete_line(fd: int, start: int, end: int) -> bytes | None:
    """The last newline-terminated line in [START, END) of FD, without its newline."""
    if end <= start:
        return None
    pos, buf = end, b""  # byte END-1 is a newline by construction
    while pos > start:
        step = min(_TAIL_CHUNK, pos - start)
        pos -= step
        buf = os.pread(fd, step, pos) + buf
        cut = buf.rfind(b"\n", 0, len(buf) - 1)
        if cut >= 0:
            return buf[cut + 1 : -1]
    return buf[:-1]


def find_end(fd: int, start: int, size: int) -> int:
    """Offset just past the last newline at or after START (START if none)."""
    pos = size
    while pos > start:
        step = min(_TAIL_CHUNK, pos - start)
        chunk = os.pread(fd, step, pos - step)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return pos - step + cut + 1
        pos -= step
    return start


def rewrite_header_file(path: Path, header: Header, replace: Any = os.replace) -> None:
    """Rewrite the header of the journal at PATH; entry lines are copied byte for byte.

    Write-temp, fsync, rename (REPLACE is the rename, a seam for fault tests),
    fsync the folder. On failure the journal is exactly as it was.
    """
    _, header_len = read_header(path)
    tmp = path.with_name(f".{path.name}.hdr-{os.getpid()}")
    try:
        with open(path, "rb") as src, fsutil.create_private(tmp) as dst:
            dst.write(dumps_line(header.model_dump(mode="json")))
            src.seek(header_len)
            while chunk := src.read(1 << 20):
                dst.write(chunk)
            dst.flush()
            os.fsync(dst.fileno())
        replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsutil.fsync_dir(path.parent)
