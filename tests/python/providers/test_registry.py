"""Provider names, settings and credentials."""

from __future__ import annotations

import pytest

from tandem.protocol.base import TandemError
from tandem.providers.credentials import resolve_credentials
from tandem.providers.native import NativeProvider
from tandem.providers.registry import build_provider, loop_limits, parse_provider


def test_parse_provider_names() -> None:
    assert parse_provider("openai:gpt-4.1").name == "openai:gpt-4.1"
    spec = parse_provider("anthropic:claude-sonnet-4-5")
    assert (spec.family, spec.target) == ("anthropic", "claude-sonnet-4-5")
    assert parse_provider("acp:claude").family == "acp"
    assert parse_provider("openai:org/model:free").target == "org/model:free"


@pytest.mark.parametrize("bad", ["", "openai", "openai:", "gemini:x", "acp: a", 42, None])
def test_bad_provider_names(bad: object) -> None:
    with pytest.raises(TandemError) as err:
        parse_provider(bad)  # type: ignore[arg-type]
    assert err.value.code == "invalid"


def test_credentials_from_env_and_explicit() -> None:
    env = {"ANTHROPIC_API_KEY": "env-key", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"}
    creds = resolve_credentials("anthropic", env=env)
    assert creds.key() == "env-key" and creds.base_url == "http://127.0.0.1:9"
    assert "env-key" not in repr(creds) and "env-key" not in creds.model_dump_json()
    explicit = resolve_credentials("anthropic", api_key="from-auth-source", env=env)
    assert explicit.key() == "from-auth-source"
    assert resolve_credentials("openai", api_key="k", env={}).base_url == (
        "https://api.openai.com/v1"
    )


def test_missing_or_bad_credentials() -> None:
    with pytest.raises(TandemError) as err:
        resolve_credentials("anthropic", env={})
    assert err.value.code == "no-credentials" and "ANTHROPIC_API_KEY" in err.value.message
    with pytest.raises(TandemError, match="OPENAI_API_KEY"):
        resolve_credentials("openai", env={})
    # A local OpenAI-compatible server needs no key.
    local = resolve_credentials("openai", env={"OPENAI_BASE_URL": "http://localhost:8080/v1"})
    assert local.key() == ""
    with pytest.raises(TandemError, match="not an http"):
        resolve_credentials("openai", api_key="k", base_url="ftp://x", env={})
    with pytest.raises(TandemError, match="control character"):
        resolve_credentials("openai", api_key="k\nX-Evil: 1", env={})


def test_build_native_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k1")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    p = build_provider("openai:gpt-x", {"native": {"max_retries": 1, "shell_timeout": 9}})
    assert isinstance(p, NativeProvider) and p.name == "openai:gpt-x"
    assert p.default_model == "gpt-x" and p.limits.max_retries == 1
    assert p.limits.shell_timeout == 9.0
    q = build_provider(
        "anthropic:claude-x",
        {"anthropic": {"base_url": "http://127.0.0.1:1", "thinking_budget": 2048}},
        credentials={"anthropic": {"api_key": "from-emacs"}},
        env={},
    )
    assert isinstance(q, NativeProvider)
    assert q.wire.credentials.key() == "from-emacs"
    assert q.wire.url() == "http://127.0.0.1:1/v1/messages"


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"native": {"retries": 1}}, "unknown key"),
        ({"native": {"max_retries": -1}}, "number >= 0"),
        ({"native": {"max_retries": True}}, "number >= 0"),
        ({"native": []}, "must be a map"),
        ({"native": {"max_steps": 0}}, "max_steps must be > 0"),
        ({"native": {"output_cap": 10}}, "output_cap must be at least"),
        ({"anthropic": {"thinking_budget": "lots"}}, "thinking_budget"),
        ({"anthropic": {"prompt_cache": "yes"}}, "prompt_cache"),
    ],
)
def test_bad_settings(settings: dict, match: str) -> None:
    with pytest.raises(TandemError, match=match):
        build_provider("anthropic:m", settings, credentials={"anthropic": {"api_key": "k"}})


def test_loop_limits_defaults() -> None:
    assert loop_limits({}).max_retries == 3


def test_acp_agent_must_be_configured() -> None:
    with pytest.raises(TandemError) as err:
        build_provider("acp:nobody", {"acp_agents": {"claude": {"command": ["x"]}}})
    assert err.value.code == "not-found" and "claude" in err.value.message


def test_acp_provider_is_built_from_settings() -> None:
    p = build_provider(
        "acp:claude",
        {"acp_agents": {"claude": {"command": ["claude-code-acp"], "env": {"A": "1"}}}},
    )
    assert p.name == "claude"
    assert p.command == ["claude-code-acp"] and p.env == {"A": "1"}  # type: ignore[attr-defined]


def test_the_agent_context_reaches_the_provider_that_uses_it() -> None:
    from pathlib import Path

    from tandem.providers.acp import AcpProvider
    from tandem.providers.registry import AgentContext

    def servers() -> list[object]:
        return []

    def trusted(_root: Path) -> bool:
        return True

    async def more_tools(_request: object) -> list[object]:
        return []

    context = AgentContext(mcp_servers=servers, project_trusted=trusted,
                           tool_source=more_tools)  # type: ignore[arg-type]
    acp = build_provider("acp:claude", {"acp_agents": {"claude": {"command": ["x"]}}},
                         agent=context)
    assert isinstance(acp, AcpProvider)
    assert acp.mcp_servers is servers and acp.project_trusted is trusted
    native = build_provider("openai:gpt-x", credentials={"openai": {"api_key": "k"}},
                            env={}, agent=context)
    assert isinstance(native, NativeProvider) and native.tool_source is more_tools
    # Without a context: nothing of a session's.
    bare = build_provider("openai:gpt-x", credentials={"openai": {"api_key": "k"}}, env={})
    assert isinstance(bare, NativeProvider) and bare.tool_source is None
