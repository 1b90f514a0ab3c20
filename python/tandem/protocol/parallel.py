"""Params and replies of the parallel-session methods (``parallel/…``).

A parallel session is a session whose root is its own tree: a git worktree
of the project on branch ``tandem/NAME`` (or a copy, for a project that is no
git repository). Landing applies its change, hunk by hunk or whole, to the
project's own tree as one turn of the project's session.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tandem.protocol.base import Params, Reply
from tandem.protocol.checkpoints import Patch

LAND_PROVIDER = "tandem:land"
"""The provider a landing turn's ``turn_start`` names: tandem's own work, no model."""

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"
"""A parallel session's name: one path component and one branch component, no ``..``."""

Place = Literal["auto", "remote", "local"]
"""Where a parallel session's tree is made: ``auto`` is ``remote`` when the project's
session runs on an agent-server host, else ``local``."""

class LandedPart(Reply):
    """One part of a parallel session's change that a landing took."""

    path: str
    hunk: int | None = None
    """0-based among the file's hunks; None: the whole file."""
    session: str = ""
    """The main session that landed it."""
    turn: int
    """The main session's turn that landed it."""
    tree: str = ""
    """The parallel tree's capture it was landed from."""


class ParallelRecord(Reply):
    """What tandem made for a parallel session, and what became of it."""

    session: str
    """The parallel session (its root is ``worktree``)."""
    name: str
    project: str
    """The project's own tree (the main tree)."""
    parent_session: str | None = None
    """The project's session that landings become turns of."""
    worktree: str
    """The parallel session's tree."""
    kind: Literal["worktree", "copy"]
    branch: str | None = None
    """``tandem/NAME`` (kind ``worktree``)."""
    base_commit: str | None = None
    """The commit the worktree was made from (kind ``worktree``)."""
    base_checkpoint: str
    """The parallel tree as made (the base commit's files, or the copy): the base of
    every landing."""
    carried_checkpoint: str | None = None
    """The parallel tree after the main tree's uncommitted changes were carried over."""
    created: str
    landed: list[LandedPart] = Field(default_factory=list)
    """Every landing, oldest first (one the main session rewound is dropped when read)."""
    removed: bool = False
    """The worktree and branch (or the copy) were removed; the journal is kept."""
    host: str | None = None
    """The agent-server host the tree is on (None: this machine); its turns run there."""
    remote_root: str | None = None
    """On a host: the main remote session's working dir there (the tree goes beside it)."""
    mirror: str | None = None
    """On a host: the parallel session's private mirror (its checkpoints are of it)."""


class CreateParams(Params):
    """``parallel/create``: a parallel session NAME of the project at ``project``."""

    project: str = Field(min_length=1)
    name: str = Field(pattern=NAME_PATTERN)
    parent_session: str | None = None
    """The project's session that will take the landings (default: its latest)."""
    directory: str | None = None
    """The folder parallel trees go in (default ``<project>/../<name>.tandem-worktrees``)."""
    carry: bool = False
    """Carry the main tree's uncommitted changes over as the first checkpoint; without it,
    a main tree with uncommitted changes is refused (``dirty``)."""
    place: Place = "auto"
    """Where the parallel tree is made (see ``Place``): ``remote`` is on the agent-server
    host of the project's session (``invalid`` when it has none)."""


class Created(Reply):
    """The parallel session made, and its journal (for ``sessions/open-file``)."""

    record: ParallelRecord
    path: str
    """The new session's journal."""
    carried: list[str] = Field(default_factory=list)
    """The paths carried over from the main tree."""


class SessionParams(Params):
    """A parallel session, by its session id."""

    session: str = Field(min_length=1)


class ListParams(Params):
    """``parallel/list``: every parallel session (only PROJECT's when given)."""

    project: str | None = None


class Records(Reply):
    """Parallel sessions, newest first."""

    records: list[ParallelRecord] = Field(default_factory=list)


class ParallelPatch(Reply):
    """``parallel/patch``: a parallel session's whole change against its base."""

    session: str
    name: str
    root: str
    """The parallel tree (the patch's paths are relative to it); for a tree on a host, its
    private mirror here (a copy as last synced: edits there never reach the host)."""
    project: str
    patch: Patch
    host: str | None = None
    """The agent-server host the tree is on (None: this machine)."""
    worktree: str = ""
    """The tree where it is (on the host for a host's)."""
    landed: list[LandedPart] = Field(default_factory=list)


class LandParams(Params):
    """``parallel/land``: take parts of a parallel session's change into the main tree.

    ``path`` with ``hunk``: that hunk (0-based among the file's hunks in
    ``parallel/patch``; ``hunk_header`` the ``@@`` line the user saw); ``path``
    alone: that file; ``paths``: those files whole; none: every file.
    """

    session: str = Field(min_length=1)
    path: str | None = Field(default=None, max_length=4096)
    hunk: int | None = Field(default=None, ge=0)
    hunk_header: str | None = Field(default=None, max_length=4096)
    paths: list[str] = Field(default_factory=list)


class Landed(Reply):
    """What a landing did: the main session's turn, files written, conflicts left."""

    session: str
    """The main session."""
    turn: int
    outcome: str
    error: str | None = None
    project: str
    written: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    conflicts: list[str] = Field(default_factory=list)
    """Files written with conflict markers (a three-way merge met edits on both sides)."""
    kept: list[str] = Field(default_factory=list)
    """Files changed on both sides that cannot be merged (a deletion met an edit, a binary
    file): the main tree's file was kept."""


class RemoveParams(Params):
    """``parallel/remove``: remove the worktree and its ``tandem/NAME`` branch (or the copy)."""

    session: str = Field(min_length=1)
    force: bool = False
    """Remove even when part of the change was never landed."""


class ParallelSummary(Reply):
    """A parallel session as the overview shows it."""

    name: str
    project: str
    worktree: str
    kind: str
    branch: str | None = None
    base_commit: str | None = None
    state: str
    """``ready`` (a change not landed yet), ``landed`` (nothing new since the latest
    landing), ``removed``, or "" (no change yet)."""
    files: int = 0
    additions: int = 0
    deletions: int = 0
    host: str | None = None
    """The agent-server host the tree is on (None: this machine)."""


PermissionModeName = Literal["ask", "auto-edit", "read-only"]


class ParallelTestParams(Params):
    """``parallel/test``: run the user's test COMMAND in a parallel session's tree.

    The command comes from the user's own settings in Emacs (never from the
    project's files); it runs with tandem's scrubbed environment (no secret),
    no input, in its own process group, killed at TIMEOUT seconds.
    """

    session: str = Field(min_length=1)
    command: list[str] = Field(min_length=1, max_length=256)
    """The program and its arguments (Emacs sends ``sh -c COMMAND``)."""
    timeout: float = Field(default=600, gt=0, le=24 * 3600)


class ParallelTestResult(Reply):
    """How a test command ended in a parallel session's tree."""

    session: str
    command: list[str]
    state: Literal["running", "ended"] = "ended"
    exit_status: int | None = None
    """The exit status; None when it was killed at the timeout (or is running)."""
    timed_out: bool = False
    seconds: float = 0.0
    output: str = ""
    """The output's last `TEST_OUTPUT_CHARS` characters (stdout and stderr together)."""
    truncated: bool = False
    log: str = ""
    """The whole output, in a file under ``$TANDEM_HOME/parallel/tests/``."""


class RunSpec(Params):
    """One result of a best-of-N: the provider (with its model), the model, the mode."""

    provider: str | None = None
    """``openai:MODEL``, ``anthropic:MODEL``, ``acp:AGENT``; default from settings."""
    model: str | None = None
    permission_mode: PermissionModeName = "auto-edit"


class BestOfParams(Params):
    """``parallel/best-of``: send TEXT to N new parallel sessions at once, one per RUNS item."""

    project: str = Field(min_length=1)
    text: str = Field(min_length=1, max_length=1_000_000)
    runs: list[RunSpec] = Field(min_length=1, max_length=8)
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,54}$")
    """The sessions are NAME-1 … NAME-N (default ``best-`` and the time)."""
    parent_session: str | None = None
    directory: str | None = None
    test_command: list[str] | None = Field(default=None, min_length=1, max_length=256)
    """Run in each tree after its turn ends (`ParallelTestParams`); none: no test."""
    test_timeout: float = Field(default=600, gt=0, le=24 * 3600)


class BestOfRun(Reply):
    """One result of a best-of-N, as the compare view shows it."""

    session: str
    name: str
    worktree: str
    path: str
    """The session's journal."""
    provider: str = ""
    model: str = ""
    permission_mode: str = ""
    turn: int = 0
    state: Literal["running", "ended", "testing"] = "running"
    outcome: str | None = None
    error: str | None = None
    answer: str = ""
    """The turn's answer (its first `ANSWER_CHARS` characters)."""
    files: int = 0
    additions: int = 0
    deletions: int = 0
    test: ParallelTestResult | None = None


class BestOf(Reply):
    """A best-of-N group: the request and each result."""

    group: str
    project: str
    text: str
    created: str
    test_command: list[str] | None = None
    test_timeout: float = 600
    runs: list[BestOfRun] = Field(default_factory=list)


class GroupParams(Params):
    """``parallel/compare``: a best-of-N group by its id."""

    group: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")
