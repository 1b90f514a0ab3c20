"""Params and replies of the turn methods (``turns/…``)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator

from tandem.protocol.base import QUEUE_TEXT_MAX, Params, Reply
from tandem.protocol.base import (
    TurnStatus as TurnStatus,  # turns/status's reply, built by the engine
)

SessionId = Field(min_length=1, max_length=100)


MAX_IMAGES = 20
"""Images one request may carry."""


class ImageInput(Params):
    """One image sent with a request: a file the user chose (PATH), or DATA in base64
    (the clipboard's), with the NAME it is shown by."""

    path: str | None = Field(default=None, min_length=1, max_length=4096)
    data: str | None = Field(default=None, min_length=1, max_length=64 << 20)
    name: str | None = Field(default=None, max_length=255)

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.path is None) == (self.data is None):
            raise ValueError("an image is either a path or data, not both or neither")
        return self


class SendParams(Params):
    """Send TEXT as an ordinary chat turn of SESSION, with IMAGES if any."""

    session: str = SessionId
    text: str = Field(min_length=1, max_length=1_000_000)
    provider: str | None = None
    """``openai:MODEL``, ``anthropic:MODEL`` or ``acp:AGENT``; default from settings."""
    model: str | None = None
    permission_mode: Literal["ask", "auto-edit", "read-only"] | None = None
    images: list[ImageInput] = Field(default_factory=list, max_length=MAX_IMAGES)
    """Validated (type by its bytes, size, path rules) before the turn is accepted."""


class Accepted(Reply):
    """The turn identity a request reserved."""

    session: str
    turn: int


class SessionParams(Params):
    """A method about one session."""

    session: str = SessionId


class TurnParams(Params):
    """A method about one turn of a session."""

    session: str = SessionId
    turn: int = Field(ge=1)
    timeout: float = Field(default=0, ge=0, le=3600)
    """For ``turns/wait``: seconds to wait (0: do not wait)."""


MAX_EDITED_BYTES = 4 * 1024 * 1024
"""The largest edited change an answer may carry (UTF-8 bytes), well inside one frame."""
MAX_REASON_CHARS = 1000
"""The longest rejection reason an answer may carry."""


class AnswerParams(Params):
    """Answer interaction INTERACTION_ID of SESSION's running turn.

    CONTENT (with ``allow_once``, for a write or edit question only) is the file
    content the user edited, written instead of the model's proposal; REASON
    (with ``reject``) is one line telling the model why it was rejected.
    """

    session: str = SessionId
    interaction_id: str = Field(min_length=1)
    answer: Literal["allow_once", "allow_session", "reject"]
    content: str | None = None
    reason: str | None = None

    @field_validator("content")
    @classmethod
    def _content_fits(cls, value: str | None) -> str | None:
        if value is not None and len(value.encode("utf-8", "surrogatepass")) > MAX_EDITED_BYTES:
            size = len(value.encode("utf-8", "surrogatepass"))
            raise ValueError(f"the edited content is {size:,} bytes, over the limit of "
                             f"{MAX_EDITED_BYTES:,} bytes (4 MiB) for an edited change; "
                             "edit the file itself instead")
        return value

    @field_validator("reason")
    @classmethod
    def _reason_is_a_line(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if len(value) > MAX_REASON_CHARS:
            raise ValueError(f"the reason is {len(value)} characters, over the limit of "
                             f"{MAX_REASON_CHARS}")
        if "\n" in value or "\r" in value:
            raise ValueError("the reason must be one line")
        return value.strip() or None

    @model_validator(mode="after")
    def _extras_match_the_answer(self) -> Self:
        if self.content is not None and self.answer != "allow_once":
            raise ValueError(f"content (an edited change) goes with the answer allow_once, "
                             f"not {self.answer}")
        if self.reason is not None and self.answer != "reject":
            raise ValueError(f"a reason goes with the answer reject, not {self.answer}")
        return self


class AgentSpec(Params):
    """One ACP agent: NAME, the COMMAND line, extra ENV as (NAME VALUE) pairs.

    A list rather than a plist keyed by name, because plist keys change
    ``-`` into ``_`` on the way in, and agent and variable names keep theirs.
    """

    name: str = Field(min_length=1)
    command: list[str] = Field(min_length=1)
    env: list[tuple[str, str]] = Field(default_factory=list)
    project_config_files: list[str] = Field(default_factory=list)
    """Project files the agent reads as configuration (``:project-config-files``)."""


class RemoteHostSpec(Params):
    """One entry of ``tandem-remote-hosts``: NAME, URL, what it may receive.

    A list entry (not a plist keyed by name) so host names keep their ``-``.
    """

    name: str = Field(min_length=1)
    url: str = Field(min_length=1)
    forward_keys: bool = False
    agent_profile: str | None = None
    api_key: SecretStr | None = None


class ConfigureParams(Params):
    """What Emacs tells the backend: ACP agents, keys from auth-source, defaults.

    Kept in memory only; never written to a journal, log or event.
    """

    acp_agents: list[AgentSpec] = Field(default_factory=list)
    credentials: dict[str, dict[str, str]] = Field(default_factory=dict)
    remote_hosts: list[RemoteHostSpec] = Field(default_factory=list)
    default_provider: str | None = None
    permission_mode: Literal["ask", "auto-edit", "read-only"] | None = None
    settings_json: str | None = Field(default=None, max_length=1 << 20)
    """Settings from Emacs customization (JSON, keys as in settings.json), laid on top
    of the settings files: the user's own, so trusted."""


class SetProviderParams(Params):
    """Make PROVIDER (``openai:MODEL``, ``anthropic:MODEL``, ``acp:AGENT``) SESSION's choice."""

    session: str = SessionId
    provider: str = Field(min_length=1, max_length=300)


class QueueParams(Params):
    """Queue TEXT in SESSION: it goes as the next turn once the running one ends well."""

    session: str = SessionId
    text: str = Field(min_length=1, max_length=QUEUE_TEXT_MAX)


class QueueItemParams(Params):
    """A method about one queued message ITEM (``q1``, ``q2``…) of SESSION."""

    session: str = SessionId
    item: str = Field(min_length=1, max_length=40)


class QueueEditParams(QueueItemParams):
    """Make TEXT the queued message ITEM's text."""

    text: str = Field(min_length=1, max_length=QUEUE_TEXT_MAX)


class QueuedMessage(Reply):
    """One message waiting in a session's queue."""

    id: str
    text: str
    ts: str


class PendingSteer(Reply):
    """Guidance given to the running turn (`turns/steer`) that it has not taken yet."""

    text: str
    given: str
    """When it was given (ISO 8601)."""


class QueueReply(Reply):
    """A session's queue, oldest first, and whether it goes on by itself."""

    session: str
    items: list[QueuedMessage] = Field(default_factory=list)
    held: str | None = None
    """Why the queue waits for `turns/queue-send` (a turn that did not end well), or None."""
    running: int | None = None
    """The turn in flight the queue waits for, or None."""
    sent_turn: int | None = None
    """The turn this call started from the queue, if it started one."""
    limit: int = 50
    """How many messages the queue may hold."""
    steers: list[PendingSteer] = Field(default_factory=list)
    """Guidance the running turn has not taken yet, oldest first (its view shows it
    waiting; once taken it is a ``steer`` entry, or it joins the queue's front)."""


class SteerParams(Params):
    """Give TEXT to SESSION's running turn: it goes at the turn's next step."""

    session: str = SessionId
    text: str = Field(min_length=1, max_length=QUEUE_TEXT_MAX)


class SteerReply(Reply):
    """The running turn took the guidance; it is sent at that turn's next step.

    Written as a ``steer`` entry when the request takes it; a turn that ends
    before its next request puts it at the front of the queue instead.
    """

    session: str
    turn: int
    waiting: int = Field(ge=1)
    """How many steers (this one included) wait for the turn's next request."""


class ResendParams(SendParams):
    """Rewind SESSION before TURN (as planned with DIGEST), then send TEXT as a new turn.

    ``digest`` is the ``sessions/rewind-plan`` digest the user confirmed:
    a plan that changed since refuses with ``stale`` and nothing happens.
    """

    turn: int = Field(ge=1)
    digest: str = Field(min_length=64, max_length=64, pattern=r"^[0-9a-f]{64}$")


class Resent(Reply):
    """What ``turns/resend`` did: the rewind, then the new turn's identity."""

    session: str
    turn: int
    """The new turn (turn numbers keep increasing after a rewind)."""
    before_turn: int
    rewind_seq: int
    """Seq of the ``rewind`` entry (``tandem-rewind-undo`` cancels it)."""
    backup: str
    """Checkpoint of the files just before the rewind."""
    rewound: list[int]
    """The turns the rewind hid."""
    restored: list[str]
    deleted: list[str]


class Cancelled(Reply):
    """Whether there was something to cancel (a turn, a compaction)."""

    cancelled: bool


class Answered(Reply):
    """``turns/answer``: the answer reached the running turn."""

    answered: bool


class Configured(Reply):
    """``turns/configure``: the names the front end's configuration gave."""

    acp_agents: list[str]
    credentials: list[str]
    remote_hosts: list[str]
