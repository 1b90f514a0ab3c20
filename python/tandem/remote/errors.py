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


def _origin(response: httpx.Response) -> str:
    """The server RESPONSE came from, as scheme://host:port (no path, no query)."""
    try:
        url = response.request.url
    except RuntimeError:  # a Response built without a request (tests, mocks)
        return "the agent-server"
    return str(url.copy_with(path="/", query=None, fragment=None)).rstrip("/")


def _conversation_of(response: httpx.Response) -> str | None:
    """The conversation id in RESPONSE's request path ``/api/conversations/ID…``, if any."""
    try:
        parts = response.request.url.path.split("/")
    except RuntimeError:
        return None
    if len(parts) > 3 and parts[1:3] == ["api", "conversations"] and parts[3]:
        return parts[3]
    return None


def _code_for(status: int) -> ErrorCode:
    if status == 401:
        return "unauthorized"
    if status == 404:
        return "not-found"
    if status == 429:
        return "remote-busy"
    if 400 <= status < 500:
        return "remote-refused"
    return "remote-failed"


def error_from_response(context: str, response: httpx.Response) -> RemoteError:
    """A RemoteError for a failed RESPONSE, prefixed by CONTEXT (what was attempted).

    The message carries the server's words verbatim (``Path must be absolute``,
    ``Path is a directory``…), the status and the server it came from; a 401
    adds what to check, a 429 that the server is at capacity, a 404 on a
    conversation that the conversation is gone (the server restarted or
    deleted it).
    """
    status = response.status_code
    origin = _origin(response)
    where = "" if origin in context else f" from {origin}"
    message = f"{context}: {server_message(response)} (HTTP {status}{where})"
    code = _code_for(status)
    if status == 401:
        message += "; the session API key is missing or wrong"
    elif status == 429:
        message += "; the agent-server is at capacity (too many conversations running), " \
                   "try again when one has finished"
    elif status == 404 and (conversation := _conversation_of(response)) is not None:
        code = "remote-gone"
        message += (f"; conversation {conversation} is gone from {origin} (the server "
                    "was restarted without its state, or the conversation was deleted)")
    return RemoteError(code, message, status)


def error_from_transport(context: str, base_url: str, exc: httpx.HTTPError) -> RemoteError:
    """A RemoteError for a request that got no answer (refused, timed out, reset)."""
    reason = str(exc) or type(exc).__name__
    return RemoteError("remote-unreachable", f"{context}: {base_url} did not answer: {reason}")


def naming_host(err: TandemError, host: str) -> TandemError:
    """ERR with its message led by the agent-server's name HOST (from ``tandem-remote-hosts``).

    The URL alone does not tell the user which of their hosts failed; the
    code, status and data stay as they were.
    """
    prefix = f"agent-server {host}: "
    if err.message.startswith(prefix):
        return err
    out = RemoteError(err.code, prefix + err.message, getattr(err, "status", None))
    out.data = err.data
    out.command = err.command
    return out
