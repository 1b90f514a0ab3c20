"""The settings model and layers: hostile content refused clearly, the project filtered by trust."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tandem.config import layers
from tandem.config.grants import grant_trust
from tandem.config.layers import read_layer, resolve, untrusted_view
from tandem.config.model import (
    NativeSettings,
    SettingsModel,
    Url,
    _section_type,
    trusted_only_keys,
)
from tandem.config.trust import TrustStore
from tandem.protocol.base import TandemError
from tandem.providers.native import LoopLimits


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ({"permision_mode": "ask"}, "permision_mode: unknown key"),
        ({"anthropic": {"base_url": "http://x", "colour": 1}}, "anthropic.colour: unknown key"),
        ({"permission_mode": "yolo"}, "permission_mode"),
        ({"native": {"max_retries": "3"}}, "native.max_retries: expected a number >= 0"),
        ({"native": {"max_steps": 10**40}}, "native.max_steps: expected a number >= 0 and <= "),
        ({"anthropic": {"thinking_budget": 10**9}}, "anthropic.thinking_budget"),
        ({"anthropic": {"prompt_cache": 1}}, "anthropic.prompt_cache"),
        ({"openai": {"base_url": "file:///etc/passwd"}}, "openai.base_url: 'file:///etc/passwd'"),
        ({"openai": {"base_url": "http://a\nb"}}, "openai.base_url"),
        ({"openai": "http://x"}, "openai: must be a map"),
        ({"acp_agents": {"claude": {"command": "rm -rf /"}}}, "acp_agents.claude.command"),
        ({"acp_agents": {"claude": {"command": []}}}, "acp_agents.claude.command"),
        ({"acp_agents": {"../x": {"command": ["a"]}}}, "acp_agents.../x"),
        ({"acp_agents": {f"a{i}": {"command": ["x"]} for i in range(65)}}, "acp_agents"),
        ({"acp_agents": {"c": {"command": ["x" * 5000]}}}, "acp_agents.c.command.0"),
        ({"context_windows": {"m": 5}}, "context_windows.m: expected a number >= 1024"),
        ({"default_provider": "gemini:x"}, "default_provider"),
        ({"mcp_servers": {"s": {"command": "x", "cwd": "/"}}}, "mcp_servers.s.cwd: unknown key"),
        ({"mcp_servers": {"s": {"type": "sse", "url": "http://h"}}},
         'mcp_servers.s: type must be "stdio" (the default) or "http"'),
        ({"mcp_servers": {"s": {"type": "http", "url": "file:///x"}}},
         "mcp_servers.s.url: 'file:///x' is not an http(s) URL"),
        ({"mcp_servers": {"s": {"type": "http", "url": "http://h", "headers": {"A": "b\r\nX: y"}}}},
         "mcp_servers.s.headers.A: String should match"),
        ({"compaction_threshold": True}, "compaction_threshold"),
    ],
)
def test_hostile_values_name_the_file_and_the_key(tmp_path: Path, content: Any,
                                                  needle: str) -> None:
    path = _write(tmp_path / "p" / ".tandem" / "settings.json", content)
    with pytest.raises(TandemError) as err:
        resolve(tmp_path / "p", tmp_path / "home", tmp_path / "none.json")
    assert err.value.code == "invalid-settings"
    assert str(path) in err.value.message and needle in err.value.message, err.value.message


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{nope", "invalid JSON"),
        ("[1]", "must hold a JSON object"),
        ('{"compaction_threshold": NaN}', "NaN is not a JSON number"),
        ('{"compaction_keep_turns": ' + "9" * 5000 + "}", "invalid JSON"),
        ("[" * 100_000 + "]" * 100_000, "invalid JSON"),
        ('{"x": "' + "a" * (1 << 20) + '"}', "more than"),
        (b"\xff\xfe".decode("latin-1"), "invalid JSON"),
    ],
)
def test_unparseable_files_are_refused(tmp_path: Path, text: str, needle: str) -> None:
    path = _write(tmp_path / "settings.json", text)
    with pytest.raises(TandemError) as err:
        read_layer(path)
    assert err.value.code == "invalid-settings"
    assert str(path) in err.value.message and needle in err.value.message, err.value.message


def test_a_file_is_validated_once_per_change(tmp_path: Path, monkeypatch) -> None:
    calls: list[str] = []
    real = layers.validate

    def counting(data: Any, source: str) -> SettingsModel:
        calls.append(source)
        return real(data, source)

    monkeypatch.setattr(layers, "validate", counting)
    path = _write(tmp_path / "settings.json", {"permission_mode": "ask"})
    first = read_layer(path)
    assert read_layer(path) is first and calls == [str(path)]
    _write(path, {"permission_mode": "read-only", "auto_compact": False})
    changed = read_layer(path)
    assert changed is not first and changed.typed().permission_mode == "read-only"
    assert calls == [str(path), str(path)]


def test_every_url_and_command_bearing_key_needs_trust() -> None:
    # Any later field typed Url, or holding a command, must be marked trusted-only.
    keys = trusted_only_keys()
    assert {"openai.base_url", "anthropic.base_url", "acp_agents", "mcp_servers"} <= keys

    def urls(model: type, prefix: str = "") -> set[str]:
        out = set()
        for name, info in model.model_fields.items():
            ann = str(info.annotation)
            if "url" in name or "host" in name or "command" in name or str(Url) in ann:
                out.add(prefix + name)
            inner = _section_type(info.annotation)
            if inner is not None:
                out |= urls(inner, prefix + name + ".")
        return out

    for key in urls(SettingsModel):
        assert key in keys or any(key.startswith(k + ".") for k in keys), key


def test_native_defaults_are_the_loop_limits() -> None:
    assert NativeSettings().model_dump() == LoopLimits().__dict__


def test_untrusted_view_keeps_harmless_and_tighter_keys() -> None:
    user = {"permission_mode": "auto-edit", "native": {"shell_timeout": 60},
            "default_provider": "openai:gpt"}
    project = {"permission_mode": "read-only", "default_provider": "openai:m",
               "native": {"shell_timeout": 30, "output_cap": 1 << 24, "max_steps": 10},
               "anthropic": {"base_url": "http://evil", "thinking_budget": 1024},
               "mcp_servers": {"s": {"command": "x"}}}
    kept, ignored = untrusted_view(project, user)
    assert kept == {"permission_mode": "read-only", "default_provider": "openai:m",
                    "native": {"shell_timeout": 30, "max_steps": 10},
                    "anthropic": {"thinking_budget": 1024}}
    assert "anthropic.base_url" in ignored and "mcp_servers" in ignored
    assert any(i.startswith("native.output_cap") for i in ignored)
    _, ignored = untrusted_view({"native": {"shell_timeout": 90}}, user)
    assert ignored == ["native.shell_timeout (above your 60)"]
    _, ignored = untrusted_view({"permission_mode": "auto-edit"}, {})
    assert ignored == ["permission_mode (auto-edit is looser than your ask)"]
    # The engine is the user's: no agent, and no native family the user never named.
    for chosen in ("acp:claude", "anthropic:m"):
        kept, ignored = untrusted_view({"default_provider": chosen}, user)
        assert kept == {} and ignored == [
            f"default_provider ({chosen} is not a native provider you configured)"]
    kept, _ = untrusted_view({"default_provider": "anthropic:m"}, {"anthropic": {}})
    assert kept == {"default_provider": "anthropic:m"}


def test_trust_is_per_content_and_root_and_the_store_is_private(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "p"
    path = _write(root / ".tandem" / "settings.json", {"openai": {"base_url": "http://h:1/v1"}})
    user = tmp_path / "user.json"
    assert resolve(root, home, user).settings.openai is None
    store = TrustStore(home)
    grant_trust(root, home, user_path=user)
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    got = resolve(root, home, user)
    assert got.trusted and got.settings.openai and got.settings.openai.base_url == "http://h:1/v1"
    assert got.origin("openai.base_url") == f"openai.base_url in {path}"
    # The same root reached through a symbolic link is the same grant.
    (tmp_path / "link").symlink_to(root)
    assert resolve(tmp_path / "link", home, user).trusted
    # Another root with the same content is not trusted.
    _write(tmp_path / "q" / ".tandem" / "settings.json", path.read_text())
    assert not resolve(tmp_path / "q", home, user).trusted
    _write(path, {"openai": {"base_url": "http://h:2/v1"}})
    lapsed = resolve(root, home, user)
    assert not lapsed.trusted and lapsed.changed and lapsed.settings.openai is None
    assert "changed since you trusted it" in lapsed.warnings[0]
    store.path.write_text("{garbage")
    with pytest.raises(TandemError, match="damaged"):
        resolve(root, home, user)
