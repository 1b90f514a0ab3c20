"""The transport's limits before and after ``hello`` (docs/security.md, Transport).

Before a peer has shown the token it may cost the backend almost nothing:
a small frame, a few seconds, one of a few slots. Tests shorten the
deadline through the environment; the defaults are what Emacs gets.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """What an unauthenticated peer may use."""

    hello_deadline: float = 10.0
    """Seconds from connecting to a successful ``hello``; then the socket is closed."""
    max_unauthenticated: int = 16
    """Connections waiting for ``hello`` at once; the next one is closed at once."""
    preauth_frame: int = 64 * 1024
    """Largest frame read before ``hello``, refused from its header."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Limits:
        """The defaults, with ``TANDEM_HELLO_DEADLINE`` and ``TANDEM_MAX_UNAUTHENTICATED``."""
        base = cls()
        try:
            deadline = float(env.get("TANDEM_HELLO_DEADLINE", base.hello_deadline))
            cap = int(env.get("TANDEM_MAX_UNAUTHENTICATED", base.max_unauthenticated))
        except ValueError:
            return base
        return cls(hello_deadline=max(0.1, deadline), max_unauthenticated=max(1, cap))
