"""Session identifiers: UUIDv7 (RFC 9562), time-ordered so names sort by creation."""

from __future__ import annotations

import os
import re
import time
import uuid

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_PREFIX_RE = re.compile(r"^[0-9a-f-]{1,36}$")


def uuid7(ms: int | None = None) -> str:
    """Return a new UUIDv7 string; MS (Unix milliseconds) defaults to now.

    Python 3.11 has no ``uuid.uuid7``: 48 bits of time, version 7, 74 random
    bits and the RFC 4122 variant, as RFC 9562 §5.7 lays them out.
    """
    if ms is None:
        ms = time.time_ns() // 1_000_000
    if ms < 0 or ms >= 1 << 48:
        raise ValueError(f"timestamp out of range for UUIDv7: {ms}")
    rand = int.from_bytes(os.urandom(10), "big")
    rand_a = rand >> 68  # 12 bits
    rand_b = rand & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return str(uuid.UUID(int=value))


def is_session_id(text: str) -> bool:
    """True when TEXT is a full lowercase UUID string."""
    return bool(_UUID_RE.match(text))


def is_id_prefix(text: str) -> bool:
    """True when TEXT could be the start of a session id (hex digits and dashes)."""
    return bool(_PREFIX_RE.match(text))
