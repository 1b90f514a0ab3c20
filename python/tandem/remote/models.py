"""pydantic models of what crosses the remote boundary: LLM settings, results, targets."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from tandem.remote.paths import is_absolute


class LlmSettings(BaseModel):
    """The LLM a remote conversation's agent talks to (sent as ``agent_settings.llm``).

    The API key is a secret: it is sent to the agent-server and never echoed.
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, description="litellm model name, e.g. ``openai/gpt-4o``")
    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint")
    api_key: SecretStr | None = None
    usage_id: str = Field(default="tandem", min_length=1)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return value

    def wire(self) -> dict[str, str]:
        """The ``llm`` object of the agent-server's start-conversation body."""
        out = {"usage_id": self.usage_id, "model": self.model}
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
