"""A fake Anthropic Messages API on 127.0.0.1, driven by a script.

Speaks the real wire format: ``POST /v1/messages`` (also ``?beta=true``)
streaming Server-Sent Events ``message_start``, ``content_block_start``
(text / tool_use / thinking), ``content_block_delta`` (``text_delta``,
``input_json_delta``, ``thinking_delta``, ``signature_delta``),
``content_block_stop``, ``message_delta``, ``message_stop``, ``ping`` and
``error``; a plain JSON message when ``stream`` is false;
``POST /v1/messages/count_tokens``; ``GET /v1/models``; ``HEAD /``. Any API
key is accepted and unknown request fields are ignored, so the real Claude
Code CLI can run against it. ``GET /_fake/requests`` returns what was received.

Standalone: ``python tests/fakes/anthropic_server.py --port 0 --script FILE.json
[--record FILE.jsonl]`` prints the port on its first stdout line and serves
until killed.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakes.http_base import FakeHandler, FakeServer, RecordedRequest, serve_main  # noqa: E402
from fakes.script import Reply  # noqa: E402

_ids = itertools.count(1)

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """The Anthropic error envelope for STATUS."""
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": f"req_fake{next(_ids)}",
    }


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _usage(input_tokens: int, output_tokens: int, cache_read: int = 0,
           cache_write: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _count_tokens(body: Any) -> int:
    # A rough estimate (four characters a token) is all a client can check.
    return max(1, len(json.dumps(body)) // 4)


def tool_ids(reply: Reply) -> list[str]:
    """Stable tool-use ids for the reply's calls (given or generated)."""
    return [c.id or f"toolu_fake{next(_ids):04d}" for c in reply.tool_calls]


class AnthropicHandler(FakeHandler):
    """Routes of the Anthropic API."""

    def route(self, rec: RecordedRequest) -> None:
        """Dispatch one request."""
        method, path = rec["method"], rec.path
        if method == "HEAD" or (method == "GET" and path in ("/", "")):
            self.send_json(200, {})
        elif method == "GET" and path == "/_fake/requests":
            self.send_json(200, self.server.requests[:-1])
        elif method == "GET" and path == "/v1/models":
            self._models()
        elif method == "POST" and path == "/v1/messages/count_tokens":
            self.send_json(200, {"input_tokens": _count_tokens(rec.body)})
        elif method == "POST" and path == "/v1/messages":
            self._messages(rec)
        else:
            self.send_json(404, error_body(404, f"no route {method} {path}"))

    def _models(self) -> None:
        data = [
            {
                "type": "model",
                "id": "claude-fake-1",
                "display_name": "Claude Fake",
                "created_at": "2025-01-01T00:00:00Z",
            }
        ]
        self.send_json(
            200,
            {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[0]["id"]},
        )

    def _messages(self, rec: RecordedRequest) -> None:
        body = rec.body
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self.send_json(400, error_body(400, "messages: Field required"))
            return
        reply = self.reply_for(rec)
        if reply.status >= 400:
            self.send_json(reply.status, error_body(reply.status, reply.message), reply.headers)
        elif body.get("stream"):
            self._stream(reply, body)
        else:
            self.send_json(200, self._message(reply, body), reply.headers)

    def _message(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.thinking:
            content.append(
                {"type": "thinking", "thinking": reply.thinking, "signature": "sig-fake"}
            )
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for call, cid in zip(reply.tool_calls, tool_ids(reply), strict=True):
            content.append({"type": "tool_use", "id": cid, "name": call.name, "input": call.input})
        return {
            "id": f"msg_fake{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-fake-1"),
            "content": content,
            "stop_reason": reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn"),
            "stop_sequence": None,
            "usage": _usage(reply.input_tokens, reply.answer_tokens(), reply.cache_read_tokens,
                            reply.cache_write_tokens),
        }

    def _event(self, payload: dict[str, Any], delay: float) -> None:
        self.sse(json.dumps(payload), event=payload["type"], delay=delay)

    def _stream(self, reply: Reply, body: dict[str, Any]) -> None:
        d = reply.delay
        self.start_stream({"request-id": f"req_fake{next(_ids)}", **reply.headers})
        message = self._message(Reply(input_tokens=reply.input_tokens, output_tokens=1,
                                      cache_read_tokens=reply.cache_read_tokens,
                                      cache_write_tokens=reply.cache_write_tokens), body)
        message.update(content=[], stop_reason=None)
        self._event({"type": "message_start", "message": message}, d)
        index = 0
        if reply.thinking:
            self._block(index, {"type": "thinking", "thinking": "", "signature": ""}, d)
            for piece in _chunks(reply.thinking, reply.chunk_size):
                self._delta(index, {"type": "thinking_delta", "thinking": piece}, d)
            self._delta(index, {"type": "signature_delta", "signature": "sig-fake"}, d)
            self._stop(index, d)
            index += 1
        self._event({"type": "ping"}, d)
        if reply.text or reply.broken:
            self._block(index, {"type": "text", "text": ""}, d)
            pieces = _chunks(reply.text, reply.chunk_size)
            if reply.broken:
                for piece in pieces[: max(1, len(pieces) // 2)]:
                    self._delta(index, {"type": "text_delta", "text": piece}, d)
                self.cut_stream()
                return
            for piece in pieces:
                self._delta(index, {"type": "text_delta", "text": piece}, d)
            self._stop(index, d)
            index += 1
        for call, cid in zip(reply.tool_calls, tool_ids(reply), strict=True):
            block = {"type": "tool_use", "id": cid, "name": call.name, "input": {}}
            self._block(index, block, d)
            for piece in call.json_pieces(reply.chunk_size):
                self._delta(index, {"type": "input_json_delta", "partial_json": piece}, d)
            self._stop(index, d)
            index += 1
        if reply.stream_error:
            err = error_body(529, reply.message)
            self._event({"type": "error", "error": err["error"]}, d)
            self.end_stream()
            return
        if reply.stall:
            self.stall(lambda: self._event({"type": "ping"}, 0))
        stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        self._event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": reply.answer_tokens()},
            },
            d,
        )
        self._event({"type": "message_stop"}, d)
        self.end_stream()

    def _block(self, index: int, block: dict[str, Any], d: float) -> None:
        self._event({"type": "content_block_start", "index": index, "content_block": block}, d)

    def _delta(self, index: int, delta: dict[str, Any], d: float) -> None:
        self._event({"type": "content_block_delta", "index": index, "delta": delta}, d)

    def _stop(self, index: int, d: float) -> None:
        self._event({"type": "content_block_stop", "index": index}, d)


class FakeAnthropic(FakeServer):
    """The fake Anthropic API; ``base_url`` is what ``ANTHROPIC_BASE_URL`` takes."""

    handler = AnthropicHandler


if __name__ == "__main__":
    sys.exit(serve_main(FakeAnthropic))
