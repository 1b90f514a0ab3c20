"""The ACP connection's wire: newline-delimited JSON-RPC over the agent's pipes.

It is the SDK's own framing (one JSON message a line), given to
``connect_to_agent`` as its message transport so that tandem sees each
message before the SDK does. A notification the SDK's schema refuses —
the Claude adapter's ``usage_update`` with ``used: null`` — would otherwise
reach the SDK's catch-all and print a pydantic traceback (on the terminal of
``tandem ask``); here it is logged once per kind and skipped, and the turn
goes on. Requests are left to the SDK, which answers a bad one with a
JSON-RPC error.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from acp.schema import SessionNotification
from pydantic import BaseModel, ValidationError

log = logging.getLogger(__name__)

CHECKED_NOTIFICATIONS: dict[str, type[BaseModel]] = {"session/update": SessionNotification}
"""Notifications validated here, by method, with the model the SDK validates them with."""


def _kind(method: str, params: Any) -> str:
    """METHOD, with the update kind of a ``session/update`` (``usage_update``)."""
    update = params.get("update") if isinstance(params, dict) else None
    name = update.get("sessionUpdate") if isinstance(update, dict) else None
    return f"{method} {name}" if isinstance(name, str) else method


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" + (f" ({exc.error_count()} errors)"
                                         if exc.error_count() > 1 else "")


class AgentPipes:
    """A message transport (``acp`` SDK's ``Transport``) over an agent's stdin and stdout."""

    def __init__(self, name: str, writer: asyncio.StreamWriter,
                 reader: asyncio.StreamReader) -> None:
        self.name = name
        self._writer = writer
        self._reader = reader
        self._lock = asyncio.Lock()
        self.skipped: dict[str, int] = {}
        """Notifications skipped as off the schema, by kind."""

    async def send(self, message: dict[str, Any]) -> None:
        """Write MESSAGE as one line (one writer at a time, so lines never interleave)."""
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
        async with self._lock:
            self._writer.write(data)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next message the SDK should handle; None at the end of the agent's output."""
        while True:
            line = await self._read_line()
            if not line:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self._skip("a line that is not JSON", f"{line[:80]!r}")
                continue
            if not isinstance(message, dict):
                self._skip("a JSON value that is not a message", type(message).__name__)
                continue
            if self._fits(message):
                return message

    def _fits(self, message: dict[str, Any]) -> bool:
        method = message.get("method")
        model = CHECKED_NOTIFICATIONS.get(method) if isinstance(method, str) else None
        if model is None or "id" in message:
            return True
        try:
            model.model_validate(message.get("params"))
        except ValidationError as exc:
            self._skip(_kind(str(method), message.get("params")), _first_error(exc))
            return False
        return True

    def _skip(self, kind: str, why: str) -> None:
        seen = self.skipped.get(kind, 0)
        self.skipped[kind] = seen + 1
        if not seen:  # once per kind: an agent repeats the same fault every turn
            log.warning("ACP agent %s sent %s off the protocol's schema, skipped (%s);"
                        " later ones of this kind are skipped silently", self.name, kind, why)

    async def close(self) -> None:
        """Nothing to release: the agent process owns the pipes (`AgentProcess.stop`)."""

    async def _read_line(self) -> bytes:
        # As the SDK's framing: a line longer than the reader's limit is read in parts.
        chunks: list[bytes] = []
        try:
            while True:
                try:
                    chunks.append(await self._reader.readuntil(b"\n"))
                    return b"".join(chunks)
                except asyncio.LimitOverrunError as exc:
                    chunks.append(await self._reader.readexactly(exc.consumed))
        except asyncio.IncompleteReadError as exc:
            chunks.append(exc.partial)
            return b"".join(chunks)
