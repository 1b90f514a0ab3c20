"""The trust rule for LLM keys and remote hosts (`tandem.remote.agent_llm`)."""

from __future__ import annotations

import pytest

from tandem.config.front_end import RemoteHost
from tandem.protocol.base import TandemError
from tandem.protocol.remote import RemoteTarget
from tandem.remote.agent_llm import choose_agent

TARGET = RemoteTarget(session="s1", host="box", url="http://10.0.0.5:8000", working_dir="w",
                      resolved_working_dir="/home/u/w")
CREDS = {"openai": {"api_key": "sk-mine", "base_url": "http://127.0.0.1:9/v1"}}


def test_forward_keys_sends_the_users_llm_and_key() -> None:
    hosts = {"box": RemoteHost(url="http://10.0.0.5:8000/", forward_keys=True)}
    choice = choose_agent("openai:gpt-x", TARGET, hosts, CREDS)
    assert choice.llm is not None and choice.profile is None
    wire = choice.body()["agent_settings"]["llm"]  # type: ignore[index]
    assert wire["model"] == "openai/gpt-x" and wire["api_key"] == "sk-mine"
    assert wire["base_url"] == "http://127.0.0.1:9/v1"
    assert "sk-mine" not in repr(choice)


def test_a_profile_runs_when_keys_may_not_go() -> None:
    hosts = {"box": RemoteHost(url=TARGET.url, agent_profile="team-default")}
    choice = choose_agent("anthropic:claude-x", TARGET, hosts, CREDS)
    assert choice.body() == {"agent_profile_id": "team-default"}


@pytest.mark.parametrize("hosts", [
    {},  # a host named only by the project's settings
    {"box": RemoteHost(url=TARGET.url)},  # the user's entry without :forward-keys
    # The user's entry for "box" names another server: the target's is not the user's.
    {"box": RemoteHost(url="http://10.0.0.6:8000", forward_keys=True)},
])
def test_no_key_and_no_profile_is_refused_naming_the_setting(
        hosts: dict[str, RemoteHost]) -> None:
    with pytest.raises(TandemError) as err:
        choose_agent("openai:gpt-x", TARGET, hosts, CREDS)
    assert err.value.code == "no-credentials"
    assert "tandem-remote-hosts" in err.value.message and ":forward-keys" in err.value.message
    assert "sk-mine" not in err.value.message


def test_an_acp_provider_cannot_run_remotely() -> None:
    hosts = {"box": RemoteHost(url=TARGET.url, forward_keys=True)}
    with pytest.raises(TandemError) as err:
        choose_agent("acp:claude", TARGET, hosts, CREDS)
    assert err.value.code == "invalid"
