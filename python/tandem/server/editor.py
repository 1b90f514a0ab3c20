"""The server's `EditorBridge`: ask the Emacs that is connected about its buffers.

ACP file requests (`tandem.providers.acp_fs`) call these from inside a turn;
Emacs answers with `tandem--buffer-text` and `tandem--write-buffer`
(elisp/tandem-acp.el), and the editor tools' questions with
`tandem--instrument` (elisp/tandem-instruments.el). With no Emacs connected
every file is on disk only and the editor tools answer that they need Emacs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tandem.editor import NEEDS_EMACS, EditorError
from tandem.server.connection import Connection, ConnectionClosed, RemoteError

CALL_TIMEOUT = 20.0
"""Seconds Emacs has to answer one buffer call (a save may run hooks)."""


class EmacsEditor:
    """Buffers of the most recently connected Emacs (the one the user works in)."""

    def __init__(self, connections: Callable[[], Sequence[Connection]]) -> None:
        self._connections = connections

    def _emacs(self) -> Connection | None:
        live = [c for c in self._connections() if not c.closed.is_set()]
        return live[-1] if live else None

    async def _call(self, method: str, *args: object, timeout: float = CALL_TIMEOUT) -> object:
        conn = self._emacs()
        if conn is None:
            return None
        try:
            return await conn.call(method, *args, timeout=timeout)
        except TimeoutError:
            raise EditorError(f"Emacs did not answer within {timeout:g} s "
                              "(it may be busy)") from None
        except (RemoteError, ConnectionClosed) as exc:
            raise EditorError(str(exc)) from None

    async def buffer_text(self, path: Path) -> str | None:
        """The text of the buffer visiting PATH in Emacs, None when none does."""
        value = await self._call("tandem--buffer-text", str(path))
        if value is not None and not isinstance(value, str):
            raise EditorError(f"Emacs answered {type(value).__name__}, not a text")
        return value

    async def write_buffer(self, path: Path, content: str) -> bool:
        """Replace and save the buffer visiting PATH; False when none does."""
        return await self._call("tandem--write-buffer", str(path), content) is True

    async def instrument(self, name: str, params: dict[str, object], timeout: float) -> Any:
        """Emacs's answer to the editor tool NAME; `EditorError` when none is connected."""
        if self._emacs() is None:
            raise EditorError(NEEDS_EMACS)
        return await self._call("tandem--instrument", name, params, timeout=timeout)
