"""A fake OpenAI-compatible chat completions API on 127.0.0.1, driven by a script.

Speaks the real wire format: ``POST /v1/chat/completions`` with ``stream:
true`` sends ``data: {chat.completion.chunk}`` events (``delta.content``,
``delta.reasoning_content``, ``delta.tool_calls`` fragments with index, id,
function name and argument pieces, ``finish_reason``, a final ``usage`` chunk
when ``stream_options.include_usage`` is set) and ``data: [DONE]``; a plain
``chat.completion`` object when ``stream`` is false; ``GET /v1/models``.
Errors use the ``{"error": {"message", "type", "code"}}`` envelope.

Standalone: ``python tests/fakes/openai_server.py --port 0 --script FILE.json``.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakes.http_base import FakeHandler, FakeServer, RecordedRequest, serve_main  # noqa: E402
from fakes.script import Reply  # noqa: E402

_ids = itertools.count(1)

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_api_key",
    404: "not_found",
    429: "rate_limit_exceeded",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """The OpenAI error envelope for STATUS."""
    kind = ERROR_TYPES.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _call_ids(reply: Reply) -> list[str]:
    return [c.id or f"call_fake{next(_ids):04d}" for c in reply.tool_calls]


class OpenAIHandler(FakeHandler):
    """Routes of the chat completions API."""

    def route(self, rec: RecordedRequest) -> None:
        """Dispatch one request."""
        method, path = rec["method"], rec.path
        if method == "HEAD" or (method == "GET" and path in ("/", "")):
            self.send_json(200, {})
        elif method == "GET" and path == "/_fake/requests":
            self.send_json(200, self.server.requests[:-1])
        elif method == "GET" and path == "/v1/models":
            self.send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}
                    ],
                },
            )
        elif method == "POST" and path == "/v1/chat/completions":
            self._completions(rec)
        else:
            self.send_json(404, error_body(404, f"no route {method} {path}"))

    def _completions(self, rec: RecordedRequest) -> None:
        body = rec.body
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self.send_json(400, error_body(400, "'messages' is a required property"))
            return
        reply = self.reply_for(rec)
        if reply.status >= 400:
            self.send_json(reply.status, error_body(reply.status, reply.message), reply.headers)
        elif body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(reply, body, include_usage)
        else:
            self.send_json(200, self._completion(reply, body), reply.headers)

    def _finish(self, reply: Reply) -> str:
        return reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")

    def _usage(self, reply: Reply) -> dict[str, Any]:
        out = reply.answer_tokens()
        prompt = reply.input_tokens + reply.cache_read_tokens
        return {
            "prompt_tokens": prompt,
            "completion_tokens": out,
            "total_tokens": prompt + out,
            "prompt_tokens_details": {"cached_tokens": reply.cache_read_tokens},
        }

    def _completion(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.thinking:
            message["reasoning_content"] = reply.thinking
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.input)},
                }
                for c, cid in zip(reply.tool_calls, _call_ids(reply), strict=True)
            ]
        return {
            "id": f"chatcmpl-fake{next(_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish(reply)}],
            "usage": self._usage(reply),
        }

    def _stream(self, reply: Reply, body: dict[str, Any], include_usage: bool) -> None:
        d = reply.delay
        base = {
            "id": f"chatcmpl-fake{next(_ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "system_fingerprint": "fp_fake",
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            self.sse(json.dumps({**base, "choices": [choice]}), delay=d)

        self.start_stream(reply.headers)
        chunk({"role": "assistant", "content": ""})
        for piece in _chunks(reply.thinking, reply.chunk_size) if reply.thinking else []:
            chunk({"reasoning_content": piece})
        pieces = _chunks(reply.text, reply.chunk_size) if reply.text else []
        if reply.broken:
            for piece in pieces[: max(1, len(pieces) // 2)]:
                chunk({"content": piece})
            self.cut_stream()
            return
        for piece in pieces:
            chunk({"content": piece})
        for i, (call, cid) in enumerate(zip(reply.tool_calls, _call_ids(reply), strict=True)):
            head = {"index": i, "id": cid, "type": "function"}
            chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
            for piece in call.json_pieces(reply.chunk_size):
                chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        if reply.stream_error:
            self.sse(json.dumps(error_body(500, reply.message)), delay=d)
            self.end_stream()
            return
        if reply.stall:
            self.stall(lambda: self.sse_comment("keep-alive"))
        chunk({}, self._finish(reply))
        if include_usage:
            self.sse(json.dumps({**base, "choices": [], "usage": self._usage(reply)}), delay=d)
        self.sse("[DONE]", delay=d)
        self.end_stream()


class FakeOpenAI(FakeServer):
    """The fake chat completions API; ``base_url + "/v1"`` is ``OPENAI_BASE_URL``."""

    handler = OpenAIHandler


if __name__ == "__main__":
    sys.exit(serve_main(FakeOpenAI))
