"""Credentials of the native providers: API key and base URL, from Emacs or the environment.

The key is held as a pydantic ``SecretStr`` so that printing, logging or
serialising a `Credentials` never shows it; only the HTTP layer unwraps it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


def _origin(url: str) -> tuple[str, int | None]:
    parts = urlsplit(url if "//" in url else f"//{url}")
    port = parts.port
    if port is None and parts.scheme:
        port = 443 if parts.scheme == "https" else 80
    return (parts.hostname or "").lower(), port


def host_matches(bound: str, url: str) -> bool:
    """True when URL is on host BOUND (``host`` or ``host:port``; a URL binds its own port)."""
    want_host, want_port = _origin(bound)
    host, port = _origin(url)
    return want_host == host and (want_port is None or want_port == port)


def bound_credentials(
    family: ApiFamily,
    given: Mapping[str, str],
    settings_url: str | None,
    env: Mapping[str, str] | None = None,
    origin: Callable[[str], str] | None = None,
) -> Credentials:
    """Credentials from GIVEN (what Emacs pushed), SETTINGS_URL and ENV, host-bound.

    A pushed key is bound to the ``host`` it was looked up for (else to its own
    ``base_url``). When the effective base URL is on another host the key is
    not sent: ``host-mismatch``, naming the setting that chose the URL.
    """
    env = secrets.lookup_env() if env is None else env
    creds = resolve_credentials(family, api_key=given.get("api_key"),
                                base_url=given.get("base_url") or settings_url, env=env)
    bound = given.get("host") or given.get("base_url")
    if given.get("api_key") and bound and not host_matches(bound, creds.base_url):
        if given.get("base_url"):
            chose = "the front end's base_url"
        elif settings_url:
            chose = (origin or (lambda k: f"settings {k}"))(f"{family}.base_url")
        elif env.get(ENV_BASE[family]):
            chose = ENV_BASE[family]
        else:
            chose = "the default base URL"
        raise TandemError(
            "host-mismatch",
            f"Not sending the {family} key: it is for {bound}, but {chose} points at "
            f"{urlsplit(creds.base_url).netloc}. Store a key for that host in auth-source, "
            "or change the setting.")
    return creds
