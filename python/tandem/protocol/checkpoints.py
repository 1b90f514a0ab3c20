"""The checkpoint methods' params, and the records they answer with: checkpoints,
patches, restore plans.

These are the shapes the turn engine, Rewind and Emacs see (the
checkpoint engine builds them, the protocol carries them). A checkpoint's
own record is stored as the JSON message of its commit in the private
repository (`CheckpointRecord`), so the record and the snapshot it describes
are written by one atomic ref update.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from tandem.protocol.base import Params

GapReason = Literal["too-large", "unreadable"]
Completeness = Literal["no-changes", "captured", "incomplete"]
ChangeStatus = Literal["created", "modified", "deleted", "renamed"]
PatchGapKind = Literal["skipped-file-changed", "ran-shell", "wrote-outside"]
RestoreGapKind = Literal["gap-at-checkpoint", "gap-now", "not-captured-now"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Gap(_Model):
    """A path a snapshot could not capture, named instead of silently skipped.

    ``path`` is relative to the workspace root (POSIX separators); a
    directory gap ends with ``/`` and covers everything under it. ``size``
    and ``mtime_ns`` fingerprint the path so a later diff can tell whether
    the uncaptured thing changed.
    """

    path: str
    reason: GapReason
    size: int | None = None
    mtime_ns: int | None = None

    def covers(self, path: str) -> bool:
        """True when PATH is this gap or lies under this directory gap."""
        if self.path.endswith("/"):
            return path.startswith(self.path) or path + "/" == self.path
        return path == self.path


class CheckpointRecord(_Model):
    """What the commit message of a checkpoint holds (JSON)."""

    tandem_checkpoint: Literal[1] = 1
    label: str
    created: datetime
    root: str
    gaps: list[Gap] = Field(default_factory=list)
    owner: str | None = None
    """The session that took it (its checkpoints go when its journal does)."""
    turn: int | None = None
    """The turn it belongs to (retention by turns counts these)."""


class Checkpoint(_Model):
    """A snapshot of a workspace root: ``id`` is its commit in the private repo."""

    id: str
    tree: str
    label: str
    created: datetime
    root: str
    gaps: list[Gap] = Field(default_factory=list)
    owner: str | None = None
    turn: int | None = None


class FileChange(_Model):
    """One file's change between two states.

    ``old_mode``/``new_mode`` are git modes (``100644``, ``100755``,
    ``120000`` for a symbolic link); None on the side where the file does not
    exist. ``additions``/``deletions`` are line counts (None when binary).
    """

    path: str
    status: ChangeStatus
    old_path: str | None = None
    binary: bool = False
    old_mode: str | None = None
    new_mode: str | None = None
    mode_changed: bool = False
    additions: int | None = None
    deletions: int | None = None
    similarity: int | None = None


class PatchGap(_Model):
    """Why a patch may not show everything that changed."""

    kind: PatchGapKind
    path: str | None = None
    detail: str = ""


class Patch(_Model):
    """The difference between a checkpoint and a later state.

    ``diff`` is unified diff text in git's format (for Emacs ``diff-mode``);
    binary files appear as ``Binary files … differ``. ``completeness`` is
    ``no-changes`` (complete observation, nothing changed), ``captured``
    (every change is in ``files``) or ``incomplete`` (``gaps`` names what
    may be missing).
    """

    from_id: str
    to_id: str | None
    from_tree: str
    to_tree: str
    files: list[FileChange] = Field(default_factory=list)
    diff: str = ""
    diff_truncated: bool = False
    completeness: Completeness
    gaps: list[PatchGap] = Field(default_factory=list)


class RestoreGap(_Model):
    """A path a restore will not touch, and why."""

    path: str
    kind: RestoreGapKind
    detail: str = ""


class RestorePlan(_Model):
    """What restoring a checkpoint would do, for the user to confirm.

    ``current_tree`` is the working tree as observed when the plan was made:
    `Checkpointer.restore` refuses when the tree moved on since, so what the
    user confirmed is what happens. ``changed_externally`` lists files whose
    current state differs from the last state tandem knew (``expected_after``):
    someone other than tandem changed them, and the restore would overwrite
    or delete them.
    """

    checkpoint_id: str
    current_tree: str
    to_restore: list[str] = Field(default_factory=list)
    to_delete: list[str] = Field(default_factory=list)
    changed_externally: list[str] = Field(default_factory=list)
    gaps: list[RestoreGap] = Field(default_factory=list)
    diff: str = ""
    diff_truncated: bool = False

    @property
    def empty(self) -> bool:
        """True when the restore would change nothing."""
        return not self.to_restore and not self.to_delete


class RestoreResult(_Model):
    """What a completed restore did; ``backup`` holds the state it replaced."""

    checkpoint_id: str
    backup: Checkpoint
    restored: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    gaps: list[RestoreGap] = Field(default_factory=list)


class RestoreStart(_Model):
    """A restore about to move files: given to ``on_start`` before the first one moves.

    A caller that must survive a crash (Rewind) records these: the backup
    holds every file as it was, and ``token`` names the restore's temporary
    files (``.NAME.tandem-TOKEN`` beside each file it writes).
    """

    backup: str
    """Checkpoint id of the files as they are now (what a rollback goes back to)."""
    target: str
    """Checkpoint id the files are restored to."""
    token: str
    """Names the temporary files of this restore."""


class UndoResult(_Model):
    """What putting a restore's files back to its backup did (`Checkpointer.undo_restore`)."""

    safety: str | None = None
    """Checkpoint of the files just before they were put back (None: nothing to put back)."""
    put_back: list[str] = Field(default_factory=list)
    """Paths brought back to the backup's state."""
    left: list[str] = Field(default_factory=list)
    """Paths in neither the backup's nor the target's state (changed since): left alone."""
    temp_removed: list[str] = Field(default_factory=list)
    """The restore's own temporary files found in the workspace and removed."""


class ListParams(Params):
    """``checkpoints/list``: the newest kept checkpoints of ROOT."""

    root: str = Field(min_length=1)
    limit: int = Field(default=50, ge=1, le=1000)


class DiffParams(Params):
    """``checkpoints/diff``: patch from checkpoint START to TO (None: the root now)."""

    root: str = Field(min_length=1)
    start: str = Field(min_length=40, max_length=40)
    to: str | None = Field(default=None, min_length=40, max_length=40)


class PlanParams(Params):
    """``checkpoints/plan-restore``: what restoring CHECKPOINT would do now."""

    root: str = Field(min_length=1)
    checkpoint: str = Field(min_length=40, max_length=40)
    expected_after: str | None = Field(default=None, min_length=40, max_length=40)


class CheckpointList(RootModel[list[Checkpoint]]):
    """``checkpoints/list``: checkpoints, newest first."""


class MirrorGapRecord(_Model):
    """What a remote session's sync could not bring into its mirror (path, reason, detail)."""

    path: str
    reason: str
    detail: str = ""


class MirrorPatch(_Model):
    """Where a remote session's turn patch was taken: the server's host and dir, the mirror."""

    host: str | None
    working_dir: str
    mirror: str
    """The local mirror whose checkpoints the patch is between."""
    gaps: list[MirrorGapRecord] = Field(default_factory=list)


class PatchSummary(_Model):
    """A `Patch` without its diff text, which a turn's end records (``diff_chars`` long).

    The journal's ``turn_end`` entry and a directive attempt carry it as
    ``patch``; the diff itself is read back from the two checkpoints.
    """

    from_id: str
    to_id: str | None
    from_tree: str
    to_tree: str
    files: list[FileChange] = Field(default_factory=list)
    diff_truncated: bool = False
    completeness: Completeness
    gaps: list[PatchGap] = Field(default_factory=list)
    diff_chars: int = 0
    remote: MirrorPatch | None = None
    """A remote session's turn: where its files are (None: the project's own)."""

    @classmethod
    def of(cls, patch: Patch) -> PatchSummary:
        """PATCH summarised: every field but the diff, and the diff's length."""
        kept = set(cls.model_fields) - {"diff_chars", "remote"}
        return cls(**{name: getattr(patch, name) for name in kept}, diff_chars=len(patch.diff))

    @classmethod
    def read(cls, value: object) -> PatchSummary | None:
        """The summary a journal recorded as VALUE; None when it recorded none (or an error)."""
        if not isinstance(value, dict) or "error" in value:
            return None
        try:
            return cls.model_validate(value)
        except ValueError:
            return None

    def recorded(self) -> dict[str, object]:
        """The JSON object a journal's ``turn_end`` holds (``remote`` only for a remote turn)."""
        return self.model_dump(mode="json", exclude={"remote"} if self.remote is None else None)

    def paths(self) -> list[str]:
        """The paths the patch changed, in its order."""
        return [f.path for f in self.files]
