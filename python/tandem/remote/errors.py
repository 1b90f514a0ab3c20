"""Errors from an agent-server, turned into messages a user can act on."""

from __future__ import annotations

import json

import httpx

from tandem.protocol.base import TandemError
from tandem.protocol.errors import ErrorCode


class RemoteError(TandemError):
    """A request to an agent-server failed; STATUS is the HTTP status or None."""

    def __init__(self, code: ErrorCode, message: str, status: int | None = None) -> None:
        super().__init__(code, message, {"status": status} if status is not None else None)
        self.status = status


def server_message(response: httpx.Response) -> str:
    """The server's own explanation in RESPONSE: FastAPI's ``detail``, else the text."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = response.text.strip()
        return text[:500] or response.reason_phrase
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, str) and detail:
        return detail
    if isinstance(detail, list):  # a validation error: one line per problem
        lines = []
        for item in detail[:5]:
            if isinstance(item, dict):
                where = ".".join(str(p) for p in item.get("loc", []))
                lines.append(f"{where}: {item.get('msg', item)}")
            else:
                lines.append(str(item))
        return "; ".join(lines)
    return json.dumps(body)[:500]


def _code_for(status: int) -> ErrorCode:
    if status == 401:
        return "unauthorized"
    if status == 404:
        return "not-found"
    if 400 <= status < 500:
        return "remote-refused"
    return "remote-failed"


def error_from_response(context: str, response: httpx.Response) -> RemoteError:
    """A RemoteError for a failed RESPONSE, prefixed by CONTEXT (what was attempted).

    The message carries the server's words verbatim (``Path must be absolute``,
    ``Path is a directory``…) and the status; a 401 adds what to check.
    """
    status = response.status_code
    message = f"{context}: {server_message(response)} (HTTP {status})"
    if status == 401:
        message += "; the session API key is missing or wrong"
    return RemoteError(_code_for(status), message, status)


def error_from_transport(context: str, base_url: str, exc: httpx.HTTPError) -> RemoteError:
    """A RemoteError for a request that got no answer (refused, timed out, reset)."""
    reason = str(exc) or type(exc).__name__
    return RemoteError("remote-unreachable", f"{context}: {base_url} did not answer: {reason}")
