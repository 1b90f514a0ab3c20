"""Which MCP servers a root's settings configure, and their ACP ``mcpServers`` shape.

The settings model (`tandem.config.model`) validates the entries; a project's
``mcp_servers`` only get here once the user trusts the project (the key is
`TRUSTED_ONLY`), so everything in the effective settings is the user's choice.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tandem.config.model import McpHttpServer, McpStdioServer, SettingsModel

ServerConfig = McpStdioServer | McpHttpServer


def configured(settings: SettingsModel) -> dict[str, ServerConfig]:
    """The MCP servers of SETTINGS (already trust-filtered), by name."""
    return dict(settings.mcp_servers or {})


def fingerprint(config: ServerConfig) -> str:
    """A digest of CONFIG: a running server whose entry changed is restarted."""
    return hashlib.sha256(config.model_dump_json().encode()).hexdigest()[:16]


def describe(config: ServerConfig) -> str:
    """One line for the user: the command line or the URL (never header values)."""
    if isinstance(config, McpHttpServer):
        return config.url
    return " ".join([config.command, *config.args])


def acp_server(name: str, config: ServerConfig) -> Any:
    """CONFIG as an ACP ``session/new`` entry (`acp.schema` model).

    Stdio: ``command``, ``args``, ``env`` as a name/value list; HTTP: ``url``,
    ``headers`` as a name/value list.
    """
    from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio

    if isinstance(config, McpHttpServer):
        return HttpMcpServer(type="http", name=name, url=config.url,
                             headers=[HttpHeader(name=k, value=v)
                                      for k, v in config.headers.items()])
    return McpServerStdio(name=name, command=config.command, args=list(config.args),
                          env=[EnvVariable(name=k, value=v) for k, v in config.env.items()])


def as_json(config: ServerConfig) -> dict[str, object]:
    """CONFIG as plain JSON data, header values masked (for listings)."""
    data: dict[str, Any] = json.loads(config.model_dump_json())
    if "headers" in data:
        data["headers"] = {k: "***" for k in data["headers"]}
    if "env" in data:
        data["env"] = {k: "***" for k in data["env"]}
    return data
