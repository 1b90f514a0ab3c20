"""Credentials of the native providers: API key and base URL, from Emacs or the environment.

The key is held as a pydantic ``SecretStr`` so that printing, logging or
serialising a `Credentials` never shows it; only the HTTP layer unwraps it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr

from tandem import secrets
from tandem.protocol.base import TandemError

ApiFamily = Literal["openai", "anthropic"]

DEFAULT_BASE = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
"""Default base URLs. OpenAI's includes ``/v1`` (as ``OPENAI_BASE_URL`` does); Anthropic's not."""
ENV_KEY = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
ENV_BASE = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


class Credentials(BaseModel):
    """Where to send requests and with which key (possibly none, for a local server)."""

    model_config = ConfigDict(frozen=True)

    family: ApiFamily
    base_url: str
    api_key: SecretStr | None = None

    def key(self) -> str:
        """The key in clear, for the Authorization header only ('' when there is none)."""
        return self.api_key.get_secret_value() if self.api_key is not None else ""


def _check_url(url: str, source: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise TandemError("invalid", f"{source}: {url!r} is not an http(s) URL")
    return url.rstrip("/")


def resolve_credentials(
    family: ApiFamily,
    api_key: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Credentials:
    """Credentials for FAMILY: explicit values (from Emacs auth-source) win over the environment.

    ENV defaults to `tandem.secrets.lookup_env`: the keys handed over at start,
    then ``os.environ``.

    Raises `TandemError` ``no-credentials`` when no key is found, except for an
    OpenAI-compatible server at a non-default base URL (local llama.cpp, vLLM),
    which usually needs none.
    """
    if family not in DEFAULT_BASE:
        raise TandemError("invalid", f"unknown API family {family!r}")
    # Keys live in `tandem.secrets` (memory), not in the backend's environment.
    env = secrets.lookup_env() if env is None else env
    explicit_base = base_url or env.get(ENV_BASE[family]) or ""
    source = "base_url" if base_url else ENV_BASE[family]
    url = _check_url(explicit_base, source) if explicit_base else DEFAULT_BASE[family]
    key = api_key if api_key is not None else env.get(ENV_KEY[family], "")
    if key is not None and any(c in key for c in "\r\n\x00"):
        raise TandemError("invalid", f"{ENV_KEY[family]}: the key contains a control character")
    if not key:
        if family == "openai" and url != DEFAULT_BASE["openai"]:
            return Credentials(family=family, base_url=url)
        raise TandemError(
            "no-credentials",
            f"no API key for {family}: set {ENV_KEY[family]} or add it to auth-source",
        )
    return Credentials(family=family, base_url=url, api_key=SecretStr(key.strip()))
