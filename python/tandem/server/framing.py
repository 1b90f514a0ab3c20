"""EPC framing: six hexadecimal digits of byte length, then a UTF-8 S-expression."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from tandem.protocol import sexp

HEADER = 6
MAX_WIRE = 0xFFFFFF
"""The largest payload a 6-hex-digit header can describe (16 MiB - 1)."""
MAX_FRAME = 4 * 1024 * 1024
"""Replies larger than this are paged (`tandem.server.paging`), never framed."""


class FrameError(Exception):
    """The peer sent something that is not an EPC frame; the stream is lost."""


class BadMessage(Exception):
    """A well-framed payload that does not read as data; the stream goes on."""

    def __init__(self, message: str, text: str) -> None:
        super().__init__(message)
        self.text = text


def encode_frame(message: Any) -> bytes:
    """Return MESSAGE encoded as one frame. Raises `FrameError` when too large."""
    payload = sexp.dumps(message).encode("utf-8")
    if len(payload) > MAX_WIRE:
        raise FrameError(f"frame of {len(payload)} bytes exceeds the EPC limit")
    return b"%06x" % len(payload) + payload


def encode_payload(message: Any) -> bytes:
    """Return MESSAGE encoded without a header (to measure it before framing)."""
    return sexp.dumps(message).encode("utf-8")


def frame_bytes(payload: bytes) -> bytes:
    """Prefix PAYLOAD with its header."""
    if len(payload) > MAX_WIRE:
        raise FrameError(f"frame of {len(payload)} bytes exceeds the EPC limit")
    return b"%06x" % len(payload) + payload


_HEADER = re.compile(rb"[0-9a-fA-F]{6}\Z")
"""Exactly six hex digits: int(…, 16) alone also takes "-00001", " 0001a" and "0x0010"."""


async def read_frame(reader: asyncio.StreamReader, max_length: int = MAX_WIRE) -> Any | None:
    """Read one frame and return its decoded message; None at a clean end of stream.

    A header announcing more than MAX_LENGTH bytes is refused before any of
    the body is read, so a peer cannot make us buffer or parse it.
    """
    try:
        header = await reader.readexactly(HEADER)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise FrameError("stream ended inside a frame header") from e
    if not _HEADER.match(header):
        raise FrameError(f"bad frame header {header!r}")
    length = int(header, 16)
    if length > max_length:
        raise FrameError(f"frame of {length} bytes exceeds the limit of {max_length}")
    try:
        payload = await reader.readexactly(length)
    except asyncio.IncompleteReadError as e:
        raise FrameError("stream ended inside a frame") from e
    text = payload.decode("utf-8", errors="replace")
    try:
        return sexp.loads(text)
    except sexp.SexpError as e:
        raise BadMessage(f"unreadable message: {e}", text) from e
