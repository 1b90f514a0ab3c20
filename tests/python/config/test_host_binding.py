"""A key pushed by the front end goes only to the host it was found for."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import FakeAnthropic
from fakes.script import Reply

from tandem.adapters import settings as settings_api
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.protocol.base import TandemError
from tandem.protocol.sessions import NewParams
from tandem.providers.credentials import bound_credentials, host_matches
from tandem.providers.registry import build_provider
from tandem.turns.engine import TurnSpec


def test_host_matching() -> None:
    assert host_matches("api.anthropic.com", "https://api.anthropic.com")
    assert host_matches("API.anthropic.com", "https://api.anthropic.com:443/v1")
    assert not host_matches("api.anthropic.com", "https://api.anthropic.com.evil.example")
    assert host_matches("127.0.0.1:8080", "http://127.0.0.1:8080/v1")
    assert not host_matches("127.0.0.1:8080", "http://127.0.0.1:9090/v1")
    assert not host_matches("http://127.0.0.1:8080", "http://127.0.0.1:9090")


def test_a_bound_key_is_refused_for_another_host_naming_the_setting() -> None:
    given = {"api_key": "k", "host": "api.anthropic.com"}
    with pytest.raises(TandemError) as err:
        bound_credentials("anthropic", given, None, env={"ANTHROPIC_BASE_URL": "http://1.2.3.4"})
    assert err.value.code == "host-mismatch" and "ANTHROPIC_BASE_URL" in err.value.message
    with pytest.raises(TandemError) as err:
        build_provider("anthropic:m", {"anthropic": {"base_url": "http://1.2.3.4"}},
                       credentials={"anthropic": given}, env={},
                       origin=lambda k: f"{k} in /u/settings.json")
    assert "anthropic.base_url in /u/settings.json points at 1.2.3.4" in err.value.message
    # Its own host, or the default for it: sent.
    assert bound_credentials("anthropic", given, None, env={}).key() == "k"
    # A key pushed with its base URL is bound to that URL's host.
    pushed = {"api_key": "k", "base_url": "http://127.0.0.1:7"}
    assert bound_credentials("anthropic", pushed, "http://elsewhere", env={}).base_url == (
        "http://127.0.0.1:7")


def _call(app: App, module: Any, name: str, **params: Any) -> Any:
    spec = next(m for m in module.METHODS if m.name == name)
    return asyncio.run(spec.handler(app, spec.params(**params)))


def test_settings_methods_trust_only_the_content_shown(tmp_path: Path) -> None:
    app = App(home=tmp_path / "home")
    root = tmp_path / "p"
    (root / ".tandem").mkdir(parents=True)
    (root / ".tandem" / "settings.json").write_text(json.dumps({"acp_agents": {"x": {
        "command": ["x"]}}}))
    shown = _call(app, settings_api, "settings/report", cwd=str(root))
    assert shown.exists and not shown.trusted and shown.grants == ["acp_agents"]
    (root / ".tandem" / "settings.json").write_text(json.dumps({"acp_agents": {"x": {
        "command": ["y"]}}}))
    with pytest.raises(TandemError) as err:
        _call(app, settings_api, "settings/trust", cwd=str(root), sha256=shown.sha256)
    assert err.value.code == "stale"
    again = _call(app, settings_api, "settings/report", cwd=str(root))
    assert _call(app, settings_api, "settings/trust", cwd=str(root),
                 sha256=again.sha256).trusted
    assert _call(app, settings_api, "settings/untrust", cwd=str(root)).revoked


@pytest.mark.anyio
async def test_backend_turn_with_a_mismatched_key_is_refused_and_sends_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "p"
    root.mkdir()
    with FakeAnthropic([Reply(text="hi")]) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        app = App(home=tmp_path / "home")
        service = app.turns
        service.config.credentials = {"anthropic": {"api_key": "sk-bound",
                                                    "host": "api.anthropic.com"}}
        info = await new(app, NewParams(cwd=str(root)))
        with pytest.raises(TandemError) as err:  # refused before the turn starts
            await service.engine.accept(TurnSpec(session=info.id, text="hello",
                                                 provider="anthropic:m"))
        await service.aclose()
        assert err.value.code == "host-mismatch"
        assert "Not sending the anthropic key" in err.value.message
        assert "ANTHROPIC_BASE_URL" in err.value.message
        assert fake.requests == []
