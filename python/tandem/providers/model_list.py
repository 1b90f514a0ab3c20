"""The models a provider offers: one ``GET /v1/models`` with the user's key.

Used by the first-run setup in Emacs to offer a list instead of a blank
prompt. A server that does not answer in time, answers an error or answers
something that is not a model list gives a clear error; the caller then asks
for the model name in words.
"""

from __future__ import annotations

import httpx
from pydantic import BaseModel, ValidationError

from tandem.protocol.base import TandemError
from tandem.providers import families
from tandem.providers.credentials import Credentials

MAX_MODELS = 2000
"""At most this many ids are returned (a hostile server cannot flood Emacs)."""


class _Model(BaseModel):
    id: str


class _ModelList(BaseModel):
    data: list[_Model]


def models_url(creds: Credentials) -> str:
    """The list endpoint: the base URL and the family's ``models_path``."""
    return creds.base_url + families.get(creds.family).models_path


def _headers(creds: Credentials) -> dict[str, str]:
    return families.get(creds.family).auth_headers(creds.key())


async def list_models(creds: Credentials, timeout: float = 10.0) -> list[str]:
    """The model ids CREDS' server lists, sorted; `TandemError` ``provider-error`` if it cannot."""
    url = models_url(creds)
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.get(url, headers=_headers(creds))
    except httpx.TimeoutException:
        raise TandemError("provider", f"{url} did not answer within {timeout:g}s") from None
    except httpx.HTTPError as exc:
        raise TandemError("provider", f"{url}: {type(exc).__name__}: {exc}") from None
    if response.status_code != 200:
        raise TandemError("provider", f"{url} answered HTTP {response.status_code}")
    try:
        listing = _ModelList.model_validate_json(response.content)
    except ValidationError:
        raise TandemError("provider", f"{url} did not answer a model list") from None
    return sorted({m.id for m in listing.data if m.id.strip()})[:MAX_MODELS]
