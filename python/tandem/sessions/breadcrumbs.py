"""Breadcrumbs for ``continue``: the last session each front end worked in.

One small JSON file per key under ``$TANDEM_HOME/breadcrumbs/`` (``cli`` for
the terminal, ``emacs`` for Emacs), rewritten atomically on each activation.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from pydantic import BaseModel, ValidationError

from tandem.protocol.base import TandemError
from tandem.store import fsutil

log = logging.getLogger(__name__)

_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class Breadcrumb(BaseModel):
    """Where the last activated session was: id, journal path, its cwd then."""

    id: str
    path: str
    cwd: str


def _path(home: Path, key: str) -> Path:
    if not _KEY.match(key):
        raise TandemError("invalid", f"invalid breadcrumb key {key!r}")
    return home / "breadcrumbs" / f"{key}.json"


def read(home: Path, key: str) -> Breadcrumb | None:
    """The breadcrumb of KEY, or None (missing or unreadable files are ignored)."""
    try:
        return Breadcrumb.model_validate_json(_path(home, key).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def write(home: Path, key: str, crumb: Breadcrumb) -> None:
    """Record CRUMB for KEY (atomic replace); a failed write is logged, never raised.

    A breadcrumb only helps ``continue`` find the last session: a full or
    failing disk must not refuse the open or resume that writes it (the old
    breadcrumb, or none, stays).
    """
    path = _path(home, key)
    try:
        fsutil.private_dir(path.parent)
        fsutil.atomic_write(path, json.dumps(crumb.model_dump()).encode())
    except OSError as exc:
        log.warning("cannot record the last session in %s: %s", path, exc.strerror or exc)
