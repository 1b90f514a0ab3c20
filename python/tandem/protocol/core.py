"""Params and replies of the core methods: hello, ping, page and diagnostics."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from tandem.protocol.base import Params, Reply

PROTOCOL_VERSION = 1
"""The version of the methods and events Emacs and the backend speak.

Raised when a method, a reply or an event changes incompatibly; the Emacs
package knows its own (``tandem-protocol-version``) and offers to reinstall
a backend whose number differs.
"""


class HelloParams(Params):
    """First call of every connection."""

    token: str = Field(min_length=1)
    client: str = ""
    """Free text naming the client (Emacs version), for the log."""


class FamilyRow(Reply):
    """One API family, as the first-run setup shows it (`tandem.providers.families`)."""

    name: str
    """The provider prefix (``NAME:MODEL``), settings key and credentials key."""
    label: str
    """How a person calls it (``OpenAI``)."""
    default_base_url: str
    key_env: str
    """The environment variable of its API key."""
    compatible_label: str | None = None
    """Set when other servers speak this family's wire format: the setup offers them
    under this label (they may need no key)."""


class HelloReply(Reply):
    """What the backend tells a newly authenticated client."""

    version: str
    protocol: int
    """``PROTOCOL_VERSION`` of this backend."""
    pid: int
    home: str
    python: str
    """The interpreter's version (``3.11.7``)."""
    executable: str
    """The interpreter's path (``sys.executable``): which installation answers."""
    prefix: str
    """``sys.prefix``: the venv (or system Python) the backend runs in."""
    methods: list[str]
    families: list[FamilyRow] = []
    """The API families this backend speaks, in the order to offer them."""


class NoParams(Params):
    """A method that takes no arguments."""


class PageParams(Params):
    """Fetch one page of a large reply (see docs/protocol.md, Paging)."""

    handle: str = Field(min_length=1)
    index: int = Field(ge=0)


class EchoParams(Params):
    """Diagnostics: return VALUE as it arrived."""

    value: Any = None


class BigParams(Params):
    """Diagnostics: a reply of SIZE characters (to test paging)."""

    size: int = Field(default=0, ge=0, le=64 * 1024 * 1024)
    items: int = Field(default=0, ge=0, le=1_000_000)
    """When non-zero, return a list of ITEMS small plists instead of a string."""


class EmitParams(Params):
    """Diagnostics: publish COUNT delta events of TEXT for SESSION."""

    session: str = Field(min_length=1)
    count: int = Field(ge=1, le=1_000_000)
    text: str = "x"
    kind: str = "delta"


class SleepParams(Params):
    """Diagnostics: wait SECONDS before answering (to test timeouts and cancel)."""

    seconds: float = Field(ge=0, le=600)


class CallEmacsParams(Params):
    """Diagnostics: call METHOD in Emacs with ARGS and return its answer."""

    method: str = Field(min_length=1)
    args: list[Any] = Field(default_factory=list)


class DoctorCheck(Reply):
    """One line of the doctor's report."""

    name: str
    ok: bool
    detail: str
    required: bool = True
    too_open: bool = False


class DoctorReport(Reply):
    """``doctor``: the report's text, whether every required part is there, each check."""

    text: str
    ok: bool
    too_open: bool
    """Some of tandem's files are open to group or others (``tandem doctor --fix``)."""
    checks: list[DoctorCheck]
