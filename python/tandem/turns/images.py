"""Images sent with a chat request: read, checked, and kept by digest.

What Emacs sends (`ImageInput`: a file the user chose, or the clipboard's
bytes in base64) is checked here before the turn is accepted: the bytes
must be a PNG, JPEG, GIF or WebP by their first bytes (not the name), at
most the ``image_max_bytes`` setting (5 MiB unset), and a file inside the
project follows the project's read rules (a symlink out of the root is
refused, only a regular file is opened). A file outside the project is the
user's own explicit choice and is read as chosen (a regular file only).
Every refusal is one sentence and nothing is written: the composer keeps
the text and the attachment.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tandem.protocol.base import TandemError
from tandem.providers.base import ImageRef
from tandem.store.images import DEFAULT_MAX_BYTES, ImageStore, media_type
from tandem.tools.base import ToolError
from tandem.tools.fsread import open_regular, read_upto
from tandem.tools.paths import inside, resolve_in_root

if TYPE_CHECKING:  # the model is the protocol's; a plain ask loads none of it
    from tandem.protocol.turns import ImageInput


@dataclass(frozen=True)
class Attachment:
    """One checked image: its bytes and what the journal will say of it."""

    data: bytes
    media_type: str
    name: str

    @property
    def size(self) -> int:
        """Its size in bytes."""
        return len(self.data)

    def record(self, digest: str) -> dict[str, object]:
        """The journal's record of it (digest, media type, size, name: no bytes)."""
        return {"digest": digest, "media_type": self.media_type, "size": self.size,
                "name": self.name}


def _shown_name(name: str) -> str:
    """NAME as one line of at most 255 characters (it is shown and sent in markers)."""
    return " ".join(name.split())[:255] or "image"


def max_bytes(settings: dict[str, object]) -> int:
    """The ``image_max_bytes`` setting, else the default."""
    value = settings.get("image_max_bytes")
    return value if isinstance(value, int) and value > 0 else DEFAULT_MAX_BYTES


def _size_text(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB" if n >= 1024 * 1024 else f"{max(1, n // 1024)} KiB"


def _read_file(root: Path, given: str, cap: int) -> tuple[bytes, str]:
    """The bytes of the file GIVEN (at most CAP + 1 of them) and its name."""
    path = Path(given).expanduser()
    if not path.is_absolute():
        path = root / path
    real_root = Path(os.path.realpath(root))
    lexical = Path(os.path.normpath(path))
    shown = path.name or given
    try:
        if inside(real_root, lexical) or inside(Path(os.path.normpath(root)), lexical):
            # From the project: the project's read rules (no symlink out of the root).
            real = resolve_in_root(root, str(lexical))
        else:
            real = Path(os.path.realpath(lexical))
        with open_regular(real, shown) as f:
            return read_upto(f, cap + 1), shown
    except ToolError as e:
        raise TandemError("invalid", f"Cannot attach {given}: {e}") from None
    except OSError as e:
        raise TandemError("invalid", f"Cannot attach {given}: {e.strerror or e}") from None


def read_attachments(inputs: list[ImageInput], root: Path,
                     settings: dict[str, object]) -> list[Attachment]:
    """INPUTS read and checked, in order; `TandemError` ``invalid`` names the first bad one."""
    cap = max_bytes(settings)
    out: list[Attachment] = []
    for item in inputs:
        if item.path is not None:
            data, name = _read_file(root, item.path, cap)
            name = item.name or name
        else:
            name = item.name or "clipboard image"
            try:
                data = base64.b64decode(item.data or "", validate=True)
            except (binascii.Error, ValueError):
                raise TandemError("invalid", f"Cannot attach {name}: its data is not "
                                             "base64") from None
        if len(data) > cap:
            raise TandemError("invalid", f"Cannot attach {name}: it is over "
                                         f"{_size_text(cap)}, the limit for an image "
                                         "(setting image_max_bytes)")
        kind = media_type(data)
        if kind is None:
            raise TandemError("invalid", f"Cannot attach {name}: it is not a PNG, JPEG, GIF "
                                         "or WebP image (by its first bytes)")
        out.append(Attachment(data, kind, _shown_name(name)))
    return out


MAX_CONTEXT_IMAGES = 20
"""Images of earlier turns sent again with each request, newest first; older ones are
sent as a text marker (both APIs bound the images of one request)."""


def with_image_data(messages: list[Any], store: ImageStore) -> list[Any]:
    """MESSAGES with every image's bytes filled in from STORE, as copies.

    The newest `MAX_CONTEXT_IMAGES` images go with their bytes; an older one,
    or one whose bytes are gone from the store, keeps empty data and a note,
    so a wire sends a marker in its place. Messages without images are the
    same objects (the kept wire context recognises them)."""
    budget = MAX_CONTEXT_IMAGES
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        m = out[i]
        if not m.images:
            continue
        filled: list[ImageRef] = []
        for ref in reversed(m.images):
            if ref.data:
                filled.append(ref)
                budget -= 1
                continue
            if budget <= 0:
                filled.append(ref.model_copy(update={"note": "sent earlier, not sent again"}))
                continue
            data = store.get(ref.digest)
            if data is None:
                filled.append(ref.model_copy(update={"note": "no longer in the image store"}))
                continue
            budget -= 1
            filled.append(ref.model_copy(update={"data": base64.b64encode(data).decode("ascii")}))
        out[i] = m.model_copy(update={"images": list(reversed(filled))})
    return out
