"""Remote methods (``remote/…``): agent-server workspaces.

Every method that talks to a server takes its ``url`` and an optional
``api_key`` (the session API key; Emacs finds it in auth-source or the
environment and sends it with each call; it is never written anywhere).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.protocol.base import Flag, MethodSpec
from tandem.protocol.remote import (
    AttachParams,
    ConversationCreated,
    ConversationParams,
    DownloadParams,
    DownloadReply,
    HostList,
    HostsParams,
    HostStatus,
    RemoteTarget,
    ResolveParams,
    ResolveReply,
    SessionParams,
    UploadParams,
    UploadReply,
)
from tandem.remote import requests

if TYPE_CHECKING:
    from tandem.app import App


async def resolve(app: App, p: ResolveParams) -> ResolveReply:
    """Resolve a working dir against the server's home."""
    return ResolveReply(working_dir=await app.remote.resolve(p.url, p.api_key, p.working_dir))


async def upload(app: App, p: UploadParams) -> UploadReply:
    """Upload local files (basenames only) into the resolved working dir."""
    resolved, done = await requests.upload(app.remote, p.url, p.api_key, p.working_dir, p.files)
    return UploadReply(working_dir=resolved, uploaded=done)


async def download(app: App, p: DownloadParams) -> DownloadReply:
    """Download one server file to a local file (written atomically)."""
    dest, size = await requests.download(app.remote, p.url, p.api_key, p.path, p.dest)
    return DownloadReply(dest=str(dest), size=size)


async def conversation_new(app: App, p: ConversationParams) -> ConversationCreated:
    """Start a conversation; its working dir is resolved as uploads' is."""
    return await app.remote.create_conversation(
        p.url, p.api_key, p.working_dir, p.llm, p.initial_message
    )


async def hosts(app: App, p: HostsParams) -> HostList:
    """Look up each host's home (concurrently, through the cache)."""
    rows = await app.remote.probe([(h.name, h.url, h.api_key) for h in p.hosts])
    return HostList([HostStatus(**r) for r in rows])


async def attach(app: App, p: AttachParams) -> RemoteTarget:
    """Resolve the working dir now and record the session's target (no key)."""
    # Switching engines under a running turn (or rewind) would split it across two.
    app.gate.check_free(p.session, "attach")
    return await app.remote.attach(p.session, p.host, p.url, p.api_key, p.working_dir)


async def target(app: App, p: SessionParams) -> RemoteTarget | None:
    """The session's remote target, or nil."""
    return app.remote.target(p.session)


async def detach(app: App, p: SessionParams) -> Flag:
    """Forget the session's remote target."""
    app.gate.check_free(p.session, "detach")
    return Flag(app.remote.detach(p.session))


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
