"""The plan a soak message carries (``[soak 17 write t3.txt v17]``), read by both fakes."""

from __future__ import annotations

import re

PLAN = re.compile(r"\[soak (\d+) (\w+)(?: (\S+))?(?: (\S+))?\]")
"""Operation number, action and up to two arguments."""


def tag(op: int, action: str, *args: str) -> str:
    """The bracketed plan the message of operation OP carries."""
    return "[soak " + " ".join([str(op), action, *args]) + "]"
