"""The editor as a file system: what the backend may ask of the buffers a user has open.

ACP agents read and write files through the client (``fs/*``); tandem answers
from the Emacs buffer visiting the file when there is one, so the agent sees
unsaved edits and its writes land in the buffer's undo. The editor tools
(`tandem.tools.instruments`) ask it what the editor knows: diagnostics,
cross-references, outlines, open buffers, the project's files. Domain code holds an
`EditorBridge`; the server supplies one that calls into Emacs, and headless
runs (``tandem ask``, tests without Emacs) get `NoEditor`: disk only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

NEEDS_EMACS = "needs Emacs: no Emacs is connected to this backend (tandem ask runs without one)"
"""The error an editor tool answers with when there is no editor to ask."""


class EditorError(Exception):
    """The editor was asked and failed (it refused, or did not answer)."""


class EditorBridge(Protocol):
    """Access to the buffers of the user's editor."""

    async def buffer_text(self, path: Path) -> str | None:
        """The text of the buffer visiting PATH, unsaved edits included; None
        when no buffer visits it. Raises `EditorError` when the editor fails."""

    async def write_buffer(self, path: Path, content: str) -> bool:
        """Replace the text of the buffer visiting PATH by CONTENT (one undoable
        change) and save it; False when no buffer visits it (nothing done).
        Raises `EditorError` when the editor fails."""

    async def instrument(self, name: str, params: dict[str, object], timeout: float) -> Any:
        """What the editor's instrument NAME (``diagnostics``, ``xref``, ``outline``,
        ``open_buffers``, ``project_files``) answers for PARAMS within TIMEOUT
        seconds. Raises `EditorError` when there is no editor, it fails, or it
        does not answer in time."""


class NoEditor:
    """No editor attached: every file is read from and written to disk."""

    async def buffer_text(self, path: Path) -> str | None:
        """No buffer visits anything."""
        return None

    async def write_buffer(self, path: Path, content: str) -> bool:
        """No buffer visits anything: the caller writes to disk."""
        return False

    async def instrument(self, name: str, params: dict[str, object], timeout: float) -> Any:
        """There is no editor to ask: always `EditorError` saying so."""
        raise EditorError(NEEDS_EMACS)
