"""Core methods every backend answers: hello, ping, page and the doctor's report."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio.to_thread

from tandem import __version__
from tandem.doctor import report_data
from tandem.protocol.base import MethodSpec, TandemError, Text
from tandem.protocol.core import (
    PROTOCOL_VERSION,
    DoctorReport,
    FamilyRow,
    HelloParams,
    HelloReply,
    NoParams,
    PageParams,
)
from tandem.protocol.peer import CURRENT
from tandem.providers import families

if TYPE_CHECKING:
    from tandem.app import App


class Served(Protocol):
    """What ``hello`` reads of the services: `tandem serve` answers it before the App
    exists (start-up), with only the state root."""

    @property
    def home(self) -> Path:
        """The state root (``TANDEM_HOME``)."""
        ...


async def hello(app: Served, p: HelloParams) -> HelloReply:
    """Authenticate (the connection checked the token) and describe the backend."""
    return HelloReply(
        version=__version__,
        protocol=PROTOCOL_VERSION,
        pid=os.getpid(),
        home=str(app.home),
        python=sys.version.split()[0],
        executable=sys.executable,
        prefix=sys.prefix,
        methods=sorted(CURRENT.get().methods),
        families=[FamilyRow(name=f.name, label=f.label, default_base_url=f.default_base_url,
                            key_env=f.key_env[0], compatible_label=f.compatible_label)
                  for f in families.families()],
    )


async def ping(app: App, p: NoParams) -> Text:
    """Answer ``pong``: the cheapest round trip."""
    return Text("pong")


async def page(app: App, p: PageParams) -> Text:
    """Return one page of a large reply held by this connection."""
    try:
        return Text(CURRENT.get().pages.page(p.handle, p.index))
    except KeyError:
        raise TandemError("not-found", f"No paged reply {p.handle} (expired?)") from None
    except IndexError:
        raise TandemError("invalid", f"Page {p.index} is out of range for {p.handle}") from None


async def doctor(app: App, p: NoParams) -> DoctorReport:
    """The report of ``tandem doctor`` for ``M-x tandem-doctor``."""
    return DoctorReport.model_validate(await anyio.to_thread.run_sync(report_data))


METHODS = [
    MethodSpec("hello", HelloParams, hello, "Authenticate with the token; describe the backend."),
    MethodSpec("ping", NoParams, ping, "Answer pong."),
    MethodSpec("page", PageParams, page, "Fetch one page of a large reply."),
    MethodSpec("doctor", NoParams, doctor, "Report what tandem found and lacks."),
]
