"""Credentials of the native providers: API key and base URL, from Emacs or the environment.

The key is held as a pydantic ``SecretStr`` so that printing, logging or
serialising a `Credentials` never shows it; only the HTTP layer unwraps it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr, field_validator

from tandem import secrets
from tandem.protocol.base import TandemError
from tandem.providers import families

ApiFamily = str
"""The name of a registered API family (`tandem.providers.families`)."""


class Credentials(BaseModel):
    """Where to send requests and with which key (possibly none, for a local server)."""

    model_config = ConfigDict(frozen=True)

    family: ApiFamily
    base_url: str
    api_key: SecretStr | None = None

    @field_validator("family")
    @classmethod
    def _known(cls, value: str) -> str:
        return families.get(value).name

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

    Raises `TandemError` ``no-credentials`` when no key is found, except for a
    compatible server (a family with ``compatible_label``: local llama.cpp,
    vLLM) at a non-default base URL, which usually needs none.
    """
    row = families.get(family)
    # Keys live in `tandem.secrets` (memory), not in the backend's environment.
    env = secrets.lookup_env() if env is None else env
    explicit_base = base_url or env.get(row.base_url_env) or ""
    source = "base_url" if base_url else row.base_url_env
    url = _check_url(explicit_base, source) if explicit_base else row.default_base_url
    key_var = next((v for v in row.key_env if env.get(v)), row.key_env[0])
    key = api_key if api_key is not None else env.get(key_var, "")
    if key is not None and any(c in key for c in "\r\n\x00"):
        raise TandemError("invalid", f"{key_var}: the key contains a control character")
    if not key:
        if row.compatible_label is not None and url != row.default_base_url:
            return Credentials(family=family, base_url=url)
        raise TandemError(
            "no-credentials",
            f"no API key for {family}: set {' or '.join(row.key_env)} or add it to auth-source",
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
        elif env.get(families.get(family).base_url_env):
            chose = families.get(family).base_url_env
        else:
            chose = "the default base URL"
        raise TandemError(
            "host-mismatch",
            f"Not sending the {family} key: it is for {bound}, but {chose} points at "
            f"{urlsplit(creds.base_url).netloc}. Store a key for that host in auth-source, "
            "or change the setting.")
    return creds
