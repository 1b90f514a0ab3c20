"""Backend methods of the remote domain (agent-server workspaces).

Every method that talks to a server takes its ``url`` and an optional
``api_key`` (the session API key; Emacs finds it in auth-source or the
environment and sends it with each call; it is never written anywhere).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, SecretStr

from tandem.protocol.base import MethodSpec, Params, Reply, TandemError
from tandem.remote.models import ConversationCreated, LlmSettings, RemoteTarget, UploadResult

if TYPE_CHECKING:
    from tandem.app import App


def _local(path: str) -> Path:
    """PATH as a local absolute path; a relative one would depend on the backend's cwd."""
    local = Path(path).expanduser()
    if not local.is_absolute():
        raise TandemError("invalid", f"local paths must be absolute: {path!r}")
    return local


class ServerParams(Params):
    """Which agent-server: its URL and optional session API key."""

    url: str = Field(min_length=1)
    api_key: SecretStr | None = None


class ResolveParams(ServerParams):
    """``remote/resolve``: WORKING_DIR (relative, empty or absolute)."""

    working_dir: str = ""


class ResolveReply(Reply):
    """The absolute working dir on the server."""

    working_dir: str


async def resolve(app: App, p: ResolveParams) -> ResolveReply:
    """Resolve a working dir against the server's home."""
    return ResolveReply(working_dir=await app.remote.resolve(p.url, p.api_key, p.working_dir))


class UploadParams(ServerParams):
    """``remote/upload``: local FILES into WORKING_DIR on the server."""

    working_dir: str = ""
    files: list[str] = Field(min_length=1)


class UploadReply(Reply):
    """Where the files went."""

    working_dir: str
    uploaded: list[UploadResult]


async def upload(app: App, p: UploadParams) -> UploadReply:
    """Upload local files (basenames only) into the resolved working dir."""
    files = [_local(f) for f in p.files]
    resolved, done = await app.remote.upload(p.url, p.api_key, p.working_dir, files)
    return UploadReply(working_dir=resolved, uploaded=done)


class DownloadParams(ServerParams):
    """``remote/download``: the server file PATH (absolute) saved at local DEST."""

    path: str = Field(min_length=1)
    dest: str = Field(min_length=1)


class DownloadReply(Reply):
    """The saved file and its size."""

    dest: str
    size: int


async def download(app: App, p: DownloadParams) -> DownloadReply:
    """Download one server file to a local file (written atomically)."""
    dest = _local(p.dest)
    async with app.remote.client(p.url, p.api_key) as c:
        size = await c.download_to(p.path, dest)
    return DownloadReply(dest=str(dest), size=size)


class ConversationParams(ServerParams):
    """``remote/conversation-new``: start a conversation in WORKING_DIR with LLM."""

    working_dir: str = ""
    llm: LlmSettings
    initial_message: str | None = None


async def conversation_new(app: App, p: ConversationParams) -> ConversationCreated:
    """Start a conversation; its working dir is resolved as uploads' is."""
    return await app.remote.create_conversation(
        p.url, p.api_key, p.working_dir, p.llm, p.initial_message
    )


class HostSpec(Params):
    """One entry of ``tandem-remote-hosts`` with its key, if any."""

    name: str = Field(min_length=1)
    url: str = Field(min_length=1)
    api_key: SecretStr | None = None


class HostsParams(Params):
    """``remote/hosts``: the hosts to look at."""

    hosts: list[HostSpec]


class HostStatus(Reply):
    """A host's home, or why it could not be reached."""

    name: str
    url: str
    home: str | None
    error: str | None


async def hosts(app: App, p: HostsParams) -> list[HostStatus]:
    """Look up each host's home (concurrently, through the cache)."""
    rows = await app.remote.probe([(h.name, h.url, h.api_key) for h in p.hosts])
    return [HostStatus(**r) for r in rows]


class AttachParams(ServerParams):
    """``remote/attach``: make HOST the execution target of SESSION."""

    session: str = Field(min_length=1)
    host: str = Field(min_length=1)
    working_dir: str = ""


async def attach(app: App, p: AttachParams) -> RemoteTarget:
    """Resolve the working dir now and record the session's target (no key)."""
    # Switching engines under a running turn (or rewind) would split it across two.
    app.gate.check_free(p.session, "attach")
    return await app.remote.attach(p.session, p.host, p.url, p.api_key, p.working_dir)


class SessionParams(Params):
    """A session id."""

    session: str = Field(min_length=1)


async def target(app: App, p: SessionParams) -> RemoteTarget | None:
    """The session's remote target, or nil."""
    return app.remote.target(p.session)


async def detach(app: App, p: SessionParams) -> bool:
    """Forget the session's remote target."""
    app.gate.check_free(p.session, "detach")
    return app.remote.detach(p.session)


METHODS: list[MethodSpec] = [
    MethodSpec(
        "remote/resolve",
        ResolveParams,
        resolve,
        "Resolve a working dir against an agent-server's home.",
        ResolveReply,
    ),
    MethodSpec(
        "remote/upload",
        UploadParams,
        upload,
        "Upload local files into a remote working dir.",
        UploadReply,
    ),
    MethodSpec(
        "remote/download",
        DownloadParams,
        download,
        "Download one remote file to a local path.",
        DownloadReply,
    ),
    MethodSpec(
        "remote/conversation-new",
        ConversationParams,
        conversation_new,
        "Start an agent-server conversation in a resolved working dir.",
        ConversationCreated,
    ),
    MethodSpec("remote/hosts", HostsParams, hosts, "Home (or error) of each remote host."),
    MethodSpec(
        "remote/attach",
        AttachParams,
        attach,
        "Make a remote host a session's execution target.",
        RemoteTarget,
    ),
    MethodSpec("remote/target", SessionParams, target, "A session's remote target, or nil."),
    MethodSpec("remote/detach", SessionParams, detach, "Forget a session's remote target."),
]
