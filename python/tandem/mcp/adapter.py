"""MCP tools as native tools: names, capability classes, schemas, results, token cost.

A tool ``search`` of server ``docs`` is offered as ``mcp__docs__search``. Its
capability class comes from its annotations: ``readOnlyHint: true`` is
``read`` (runs in a discussion and without asking); anything else is
``execute`` (refused in a discussion and in read-only mode, asked for in
``ask`` and ``auto-edit``: an MCP tool may do anything, it is no file edit
under checkpoint).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import mcp.types as types
from pydantic import ConfigDict

from tandem.mcp.common import McpServerError
from tandem.mcp.connection import McpConnection
from tandem.providers.base import ToolKind
from tandem.tools.base import Tool, ToolArgs, ToolContext, ToolError, cap_text

PREFIX = "mcp__"
NAME_LIMIT = 64
"""The OpenAI API's limit on a function name (Anthropic allows more)."""
CHARS_PER_TOKEN = 4
"""The token estimate: characters of the definitions' JSON divided by this."""


class McpArgs(ToolArgs):
    """Any JSON object: the MCP server validates its own arguments."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class McpTool(Tool):
    """A native `Tool` whose schema is the MCP server's ``inputSchema``."""

    input_schema: dict[str, Any] | None = None

    def schema(self) -> dict[str, Any]:
        """The server's input schema (an object schema, as both wire formats need)."""
        schema = dict(self.input_schema or {})
        schema.setdefault("type", "object")
        if schema.get("type") == "object":
            schema.setdefault("properties", {})
        return schema


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def exposed_name(server: str, tool: str) -> str:
    """The name the model sees: ``mcp__SERVER__TOOL``, made API-safe and at most 64 chars."""
    return f"{PREFIX}{_safe(server)}__{_safe(tool)}"[:NAME_LIMIT]


def tool_kind(tool: types.Tool) -> ToolKind:
    """``read`` for a tool annotated ``readOnlyHint: true``, else ``execute``."""
    hints = tool.annotations
    return "read" if hints is not None and hints.readOnlyHint is True else "execute"


def tool_definitions(server: str, tools: list[types.Tool]) -> list[dict[str, Any]]:
    """The definitions as a request carries them (name, description, input schema)."""
    return [{"name": exposed_name(server, t.name), "description": t.description or "",
             "input_schema": t.inputSchema} for t in tools]


def token_estimate(server: str, tools: list[types.Tool]) -> int:
    """Tokens SERVER's tool definitions cost per request: JSON characters / 4, rounded up."""
    if not tools:
        return 0
    text = json.dumps(tool_definitions(server, tools), ensure_ascii=False,
                      separators=(",", ":"))
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def adapt(conn: McpConnection, taken: set[str]) -> list[Tool]:
    """CONN's tools as native tools; names already in TAKEN get a numeric suffix."""
    out: list[Tool] = []
    for mcp_tool in conn.tools:
        name = exposed_name(conn.name, mcp_tool.name)
        base, n = name, 2
        while name in taken:
            suffix = f"_{n}"
            name, n = base[: NAME_LIMIT - len(suffix)] + suffix, n + 1
        taken.add(name)
        out.append(_tool(conn, mcp_tool, name))
    return out


def _tool(conn: McpConnection, mcp_tool: types.Tool, name: str) -> Tool:
    original = mcp_tool.name
    label = (mcp_tool.annotations.title if mcp_tool.annotations else None) or mcp_tool.title

    async def run(ctx: ToolContext, args: Any) -> str:
        try:
            result = await conn.call(original, args.model_dump())
        except McpServerError as exc:
            raise ToolError(str(exc)) from None
        text = render_result(result)
        if result.isError:
            raise ToolError(cap_text(text or f"{original} failed", ctx.output_cap))
        return cap_text(text, ctx.output_cap)

    def title(args: Any) -> str:
        brief = json.dumps(args.model_dump(), ensure_ascii=False)
        brief = brief if len(brief) <= 60 else brief[:57] + "..."
        return f"{conn.name}: {label or original} {brief}"

    description = mcp_tool.description or f"{original} (MCP server {conn.name})"
    return McpTool(name=name, kind=tool_kind(mcp_tool), description=description,
                   args=McpArgs, run=run, title=title, input_schema=mcp_tool.inputSchema)


def render_result(result: types.CallToolResult) -> str:
    """A tool result as text: text blocks as they are, images and resources as named
    placeholders, structured content as JSON when no text block carries it already
    (the spec asks servers to send it serialized as text too)."""
    parts = [_render_block(block) for block in result.content]
    has_text = any(isinstance(b, types.TextContent) for b in result.content)
    if result.structuredContent is not None and not has_text:
        data = json.dumps(result.structuredContent, ensure_ascii=False, indent=1)
        parts.append(f"structured content:\n{data}")
    return "\n".join(p for p in parts if p)


def _render_block(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mimeType}, {_b64_size(block.data)} bytes, not shown]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mimeType}, {_b64_size(block.data)} bytes, not shown]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link: {block.name} {block.uri}]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return f"[resource {res.uri}]\n{res.text}"
        mime = getattr(res, "mimeType", None) or "binary"
        return f"[resource {res.uri}: {mime}, {_b64_size(getattr(res, 'blob', ''))} bytes]"
    return f"[{getattr(block, 'type', 'unknown')} content]"


def _b64_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=")
