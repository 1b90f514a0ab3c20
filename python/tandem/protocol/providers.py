"""Params and replies of the provider methods (``providers/…``): the default, model lists."""

from __future__ import annotations

from pydantic import Field

from tandem.protocol.base import Params, Reply


class DefaultParams(Params):
    """The provider a turn in CWD uses when none is asked for."""

    cwd: str = Field(min_length=1, max_length=4096)


class ModelsParams(Params):
    """List the models of FAMILY's server (BASE_URL, else the configured one)."""

    family: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")
    """An API family the backend knows (the ``hello`` reply's ``families``); another
    name is refused with ``invalid``, naming the known ones."""
    base_url: str | None = Field(default=None, max_length=2048)
    timeout: float = Field(default=10.0, gt=0, le=60)


class ModelsReply(Reply):
    """The model ids the server listed, and where it was asked."""

    url: str
    models: list[str]


class DefaultReply(Reply):
    """``providers/default``: the provider a turn in the directory uses (None: first run)."""

    provider: str | None
