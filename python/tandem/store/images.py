"""Images sent with requests, kept by content digest under ``TANDEM_HOME/images``.

A journal names an image by its SHA-256 digest (with its media type, size and
name), never by its bytes: the bytes are written here once, 0600 in 0700
folders, crash-safe (`fsutil.atomic_write`), and read back by digest each
time a later turn's context sends the image again. A file whose bytes no
longer hash to its name (damaged, hand-edited) reads as missing.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tandem.paths import images_dir
from tandem.store import fsutil

DEFAULT_MAX_BYTES = 5 * 1024 * 1024
"""The largest image a request may carry unless the ``image_max_bytes`` setting says
otherwise (5 MiB: the Anthropic API's own limit per image)."""

_DIGEST = re.compile(r"[0-9a-f]{64}")


def media_type(data: bytes) -> str | None:
    """The image type DATA's first bytes say it is (PNG, JPEG, GIF, WebP), else None.

    The name's extension is not trusted: the bytes are what the model is sent."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def digest_of(data: bytes) -> str:
    """The SHA-256 hex digest that names DATA in the store."""
    return hashlib.sha256(data).hexdigest()


class ImageStore:
    """The content-addressed image files of one ``TANDEM_HOME``."""

    def __init__(self, home: Path) -> None:
        self.root = images_dir(home)

    def path(self, digest: str) -> Path:
        """Where the image named DIGEST lives (refused unless DIGEST is a SHA-256 hex)."""
        if not _DIGEST.fullmatch(digest):
            raise ValueError(f"not an image digest: {digest[:80]!r}")
        return self.root / digest[:2] / digest

    def put(self, data: bytes) -> str:
        """Keep DATA (once: the same bytes are the same file); return its digest."""
        digest = digest_of(data)
        target = self.path(digest)
        try:
            if target.stat().st_size == len(data) and self.get(digest) is not None:
                return digest
        except FileNotFoundError:
            pass
        fsutil.private_dir(target.parent)
        fsutil.atomic_write(target, data)
        return digest

    def get(self, digest: str) -> bytes | None:
        """The bytes named DIGEST, or None when they are missing or damaged."""
        try:
            data = self.path(digest).read_bytes()
        except (OSError, ValueError):
            return None
        return data if digest_of(data) == digest else None
