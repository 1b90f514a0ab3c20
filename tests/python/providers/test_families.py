"""The family table: a family registered in one place is one every part of the backend serves.

A test-only family ``relay`` reuses the OpenAI wire format under another
name, key variable and base-URL variable; only `register_family` is called,
and a real turn (real App, journal, turn engine, real HTTP to the fake
OpenAI server), the model list, ``hello``, the doctor and the remote
engine's model name all follow it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fakes.openai_server import FakeOpenAI
from fakes.script import Reply

from tandem import doctor
from tandem.adapters import core as core_api
from tandem.adapters import providers as providers_api
from tandem.adapters import turns as turn_api
from tandem.adapters.sessions import new
from tandem.app import App
from tandem.config.front_end import RemoteHost
from tandem.config.model import AnthropicSettings, OpenAISettings, family_sections, validate
from tandem.events import RecordingSink
from tandem.protocol.base import TandemError
from tandem.protocol.core import HelloParams
from tandem.protocol.providers import ModelsParams
from tandem.protocol.remote import RemoteTarget
from tandem.protocol.sessions import NewParams
from tandem.protocol.turns import SendParams, SetProviderParams
from tandem.providers import families
from tandem.providers.credentials import resolve_credentials
from tandem.providers.registry import parse_provider
from tandem.remote.agent_llm import choose_agent

RELAY = replace(families.get("openai"), name="relay", label="Relay",
                key_env=("RELAY_TOKEN", "RELAY_KEY"), base_url_env="RELAY_BASE_URL",
                default_base_url="https://relay.invalid/v1", litellm_prefix="relay-llm",
                example_model="relay-1", settings=None, compatible_label=None)
"""OpenAI's wire under another name; no settings section (its URL comes from the env)."""


@pytest.fixture
def relay(monkeypatch: pytest.MonkeyPatch) -> Iterator[families.Family]:
    for var in ("RELAY_TOKEN", "RELAY_KEY", "RELAY_BASE_URL", "OPENAI_API_KEY",
                "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    families.register_family(RELAY)
    try:
        yield RELAY
    finally:
        families.unregister_family("relay")


def test_a_registered_family_runs_a_real_turn(relay: families.Family, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project.mkdir()

    events = RecordingSink()

    async def main() -> None:
        app = App(home=tmp_path / "home", events=events)
        with FakeOpenAI([Reply(text="relayed")]) as fake:
            monkeypatch.setenv("RELAY_BASE_URL", fake.base_url + "/v1")
            monkeypatch.setenv("RELAY_KEY", "sk-relay")  # the second variable also counts
            monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
            info = await new(app, NewParams(cwd=str(project)))
            try:
                await turn_api.set_provider(
                    app, SetProviderParams(session=info.id, provider="relay:relay-1"))
                sent = await turn_api.send(app, SendParams(session=info.id, text="hi"))
                await app.turns.engine.wait(info.id, sent.turn)
                listed = await providers_api.models(app, ModelsParams(family="relay"))
            finally:
                await app.turns.aclose()
            (turn,) = fake.api_requests("/v1/chat/completions")
            (listing,) = [r for r in fake.requests if r.path == "/v1/models"]
        assert turn.body["model"] == "relay-1"
        assert turn["headers"]["authorization"] == "Bearer sk-relay"
        assert listing["headers"]["authorization"] == "Bearer sk-relay"
        assert listed.models == ["fake-model"] and listed.url == fake.base_url + "/v1/models"
        assert "relayed" in repr(events.events)  # the reply streamed to the front end

    asyncio.run(main())


def test_every_part_of_the_backend_lists_a_registered_family(
        relay: families.Family, monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_provider("relay:relay-1").family == "relay"
    monkeypatch.setenv("RELAY_TOKEN", "sk-relay")
    checks = {c.name: c for c in doctor.checks()}
    assert checks["provider relay"].ok and checks["provider relay"].detail == "RELAY_TOKEN is set"
    target = RemoteTarget(session="s", host="box", url="https://agents.example",
                          working_dir="w", resolved_working_dir="/home/u/w")
    choice = choose_agent("relay:relay-1", target,
                          {"box": RemoteHost(url="https://agents.example", forward_keys=True)},
                          {})
    assert choice.llm is not None and choice.llm.model == "relay-llm/relay-1"
    assert choice.llm.base_url == "https://relay.invalid/v1"
    assert "relay:MODEL" in families.provider_forms()
    assert "relay:relay-1" in families.provider_examples()


def test_hello_describes_every_family_for_the_setup(relay: families.Family,
                                                    tmp_path: Path) -> None:
    class Peer:
        methods = {"hello": None}

    app = App(home=tmp_path / "home", events=RecordingSink())
    token = core_api.CURRENT.set(Peer)  # type: ignore[arg-type]
    try:
        reply = asyncio.run(core_api.hello(app, HelloParams(token="t")))
    finally:
        core_api.CURRENT.reset(token)
    rows = {f.name: f for f in reply.families}
    assert list(rows) == ["openai", "anthropic", "relay"]
    assert rows["relay"].key_env == "RELAY_TOKEN" and rows["relay"].label == "Relay"
    assert rows["anthropic"].default_base_url == "https://api.anthropic.com"
    assert rows["openai"].compatible_label and rows["anthropic"].compatible_label is None


def test_a_family_without_its_key_names_every_variable(relay: families.Family) -> None:
    with pytest.raises(TandemError) as err:
        resolve_credentials("relay", env={"RELAY_BASE_URL": "http://127.0.0.1:9/v1"})
    # No compatible_label: even a local server of this family needs a key.
    assert err.value.code == "no-credentials"
    assert "RELAY_TOKEN or RELAY_KEY" in err.value.message


def test_an_unknown_family_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    app = App(home=tmp_path / "home", events=RecordingSink())
    with pytest.raises(TandemError) as err:
        asyncio.run(providers_api.models(app, ModelsParams(family="gemini")))
    assert err.value.code == "invalid"
    assert err.value.message == "unknown API family 'gemini' (use openai or anthropic)"
    with pytest.raises(TandemError) as bad:
        parse_provider("gemini:pro")
    assert bad.value.message == "unknown provider family 'gemini' (use openai, anthropic or acp)"


@pytest.mark.parametrize(("row", "why"), [
    (replace(RELAY, name="openai"), "already registered"),
    (replace(RELAY, name="acp"), "not be acp"),
    (replace(RELAY, name="Relay Two"), "must match"),
    (replace(RELAY, key_env=()), "names no API key variable"),
    (replace(RELAY, settings=OpenAISettings), "settings key relay does not hold OpenAISettings"),
])
def test_a_bad_row_is_refused(row: families.Family, why: str) -> None:
    with pytest.raises(TandemError) as err:
        families.register_family(row)
    assert err.value.code == "invalid" and why in err.value.message
    assert "relay" not in families.names()


def test_a_built_in_family_cannot_be_removed() -> None:
    with pytest.raises(TandemError, match="built in"):
        families.unregister_family("openai")
    assert families.names() == ("openai", "anthropic")


def test_the_settings_sections_and_the_rows_agree() -> None:
    # config sits below providers: its sections are declared there, the table checks them.
    assert family_sections() == {"openai": OpenAISettings, "anthropic": AnthropicSettings}
    assert {f.name: f.settings for f in families.families()} == family_sections()
    assert validate({"default_provider": "anthropic:m"}, "x").default_provider == "anthropic:m"
    with pytest.raises(TandemError) as err:
        validate({"default_provider": "relay:m"}, "x")
    assert err.value.message == ("Settings x: default_provider: 'relay:m' must look like "
                                 "openai:MODEL, anthropic:MODEL or acp:AGENT")
