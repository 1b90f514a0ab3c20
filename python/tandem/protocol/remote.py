"""Params and replies of the remote methods (``remote/…``), and what crosses the remote
boundary: LLM settings, upload results, conversations, a session's target.

The rule for an absolute server path lives here because `RemoteTarget`
checks it; `tandem.remote.paths` builds on it.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, RootModel, SecretStr, field_validator

from tandem.protocol.base import Params, Reply

DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
"""``C:\\x`` or ``C:/x``: a Windows path anchored at a drive root."""
UNC = re.compile(r"^\\\\[^\\/]+[\\/][^\\/]+")
"""``\\\\server\\share``: a Windows network path."""


def is_windows_path(path: str) -> bool:
    """True if PATH is a Windows drive (``C:\\x``, ``C:/x``) or UNC path."""
    return bool(DRIVE.match(path) or UNC.match(path))


def is_absolute(path: str) -> bool:
    """True if PATH is absolute on the server: POSIX ``/x``, ``C:\\x``, ``C:/x`` or UNC."""
    return path.startswith("/") or is_windows_path(path)


class LlmSettings(BaseModel):
    """The LLM a remote conversation's agent talks to (sent as ``agent_settings.llm``).

    The API key is a secret: it is sent to the agent-server and never echoed.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, description="litellm model name, ``PREFIX/MODEL``")
    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint")
    api_key: SecretStr | None = None
    usage_id: str = Field(default="tandem", min_length=1)
    stream: bool = Field(default=True, description="the agent streams its text (delta frames)")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return value

    def wire(self) -> dict[str, str | bool]:
        """The ``llm`` object of the agent-server's start-conversation body."""
        out: dict[str, str | bool] = {"usage_id": self.usage_id, "model": self.model,
                                      "stream": self.stream}
        if self.base_url is not None:
            out["base_url"] = self.base_url
        if self.api_key is not None:
            out["api_key"] = self.api_key.get_secret_value()
        return out


class UploadResult(BaseModel):
    """One uploaded file: local FILE, its server PATH and the SIZE the server wrote."""

    file: str
    path: str
    size: int


class ConversationCreated(BaseModel):
    """A conversation the agent-server started: its ID, WORKING_DIR and status."""

    id: str
    working_dir: str
    execution_status: str | None = None


class RemoteTarget(BaseModel):
    """Where a session executes remotely; written to disk, so it holds no key."""

    model_config = ConfigDict(extra="forbid")

    session: str = Field(min_length=1)
    host: str = Field(min_length=1, description="name in ``tandem-remote-hosts``")
    url: str = Field(min_length=1)
    working_dir: str = Field(description="as the user gave it (may be relative)")
    resolved_working_dir: str = Field(description="absolute on the server")

    @field_validator("resolved_working_dir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not is_absolute(value):
            raise ValueError(f"not an absolute remote path: {value!r}")
        return value


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


class UploadParams(ServerParams):
    """``remote/upload``: local FILES into WORKING_DIR on the server."""

    working_dir: str = ""
    files: list[str] = Field(min_length=1)


class UploadReply(Reply):
    """Where the files went."""

    working_dir: str
    uploaded: list[UploadResult]


class DownloadParams(ServerParams):
    """``remote/download``: the server file PATH (absolute) saved at local DEST."""

    path: str = Field(min_length=1)
    dest: str = Field(min_length=1)


class DownloadReply(Reply):
    """The saved file and its size."""

    dest: str
    size: int


class ConversationParams(ServerParams):
    """``remote/conversation-new``: start a conversation in WORKING_DIR with LLM."""

    working_dir: str = ""
    llm: LlmSettings
    initial_message: str | None = None


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


class AttachParams(ServerParams):
    """``remote/attach``: make HOST the execution target of SESSION."""

    session: str = Field(min_length=1)
    host: str = Field(min_length=1)
    working_dir: str = ""


class SessionParams(Params):
    """A session id."""

    session: str = Field(min_length=1)


class HostList(RootModel[list[HostStatus]]):
    """``remote/hosts``: each host's home or error, in the order asked."""
