"""The checkpoint engine of one workspace root: snapshot, diff, plan, restore.

Calls are synchronous (they run git); from asyncio code run them in a
worker thread (``anyio.to_thread.run_sync``). Every operation holds the
workspace lock, so two sessions on one root never interleave.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from tandem.checkpoints import diffing, maintenance, refs, undo
from tandem.checkpoints.capture import Capture, IgnoreWatch, capture
from tandem.checkpoints.git import Git, user_excludes_file
from tandem.checkpoints.layout import Layout
from tandem.checkpoints.maintenance import LiveSessions, MaintenanceResult, Retention
from tandem.checkpoints.restore import (
    FileHook,
    RollbackFailed,
    apply,
    new_token,
    restore_ops,
)
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import (
    Checkpoint,
    CheckpointRecord,
    Completeness,
    Gap,
    Patch,
    PatchGap,
    RestoreGap,
    RestorePlan,
    RestoreResult,
    RestoreStart,
    UndoResult,
)
from tandem.store.fsutil import atomic_write

DEFAULT_SIZE_CAP = 10 * 1024 * 1024
"""Files larger than this (bytes) are recorded as gaps, not captured."""
DEFAULT_MAX_DIFF_CHARS = 2_000_000
"""Diff text longer than this is cut at a file boundary (``diff_truncated``)."""
_ID = re.compile(r"^[0-9a-f]{40}$")
_MAX_LABEL = 500


class Checkpointer:
    """Checkpoints of the workspace ROOT, stored under HOME (``TANDEM_HOME``)."""

    def __init__(
        self,
        home: Path,
        root: Path,
        *,
        size_cap: int = DEFAULT_SIZE_CAP,
        max_diff_chars: int = DEFAULT_MAX_DIFF_CHARS,
    ) -> None:
        if not isinstance(size_cap, int) or isinstance(size_cap, bool) or size_cap < 0:
            raise TandemError("invalid", f"size cap must be a non-negative integer: {size_cap!r}")
        if not isinstance(max_diff_chars, int) or max_diff_chars < 1:
            raise TandemError("invalid", f"max_diff_chars must be positive: {max_diff_chars!r}")
        root_path = Path(os.fspath(root)).expanduser()
        if not root_path.is_absolute():
            raise TandemError("invalid", f"workspace root must be absolute: {root}")
        try:
            root_path = root_path.resolve(strict=True)
        except OSError as e:
            raise TandemError("not-found", f"workspace root does not exist: {root}") from e
        if not root_path.is_dir():
            raise TandemError("invalid", f"workspace root is not a directory: {root}")
        home_path = Path(os.fspath(home)).expanduser().resolve()
        self.root = root_path
        self.size_cap = size_cap
        self.max_diff_chars = max_diff_chars
        self.layout = Layout(home_path, root_path)
        excludes_file = user_excludes_file()
        self.git = Git(self.layout.git_dir, excludes_file)
        self._watch = IgnoreWatch(
            [_global_excludes(excludes_file), root_path / ".git/info/exclude"],
            self.layout.ignore_state,
        )
        # Never capture (nor restore!) tandem's own state when it lives inside
        # the root, e.g. a root of ~ with TANDEM_HOME in ~/.local/state.
        self._excludes: list[str] = []
        if home_path.is_relative_to(root_path) and home_path != root_path:
            rel = home_path.relative_to(root_path).as_posix()
            self._excludes.append("/" + _literal_pattern(rel) + "/")
        with self.layout.locked():
            self.layout.ensure(self.git)

    # -- checkpoints ---------------------------------------------------------

    def snapshot(self, label: str, *, owner: str | None = None,
                 turn: int | None = None) -> Checkpoint:
        """Capture the root now and keep it as a checkpoint named LABEL.

        OWNER is the session taking it and TURN its turn: `maintain` drops
        the checkpoints of sessions that are gone, and retention counts turns.
        """
        label = _check_label(label)
        refs.check_owner(owner)
        if turn is not None and (not isinstance(turn, int) or isinstance(turn, bool)):
            raise TandemError("invalid", f"turn must be an integer: {turn!r}")
        with self.layout.locked():
            self._recover_locked()
            return self._snapshot_locked(label, owner, turn)

    def maintain(self, retention: Retention, live: LiveSessions | None = None,
                 *, prune_now: bool = False) -> MaintenanceResult | None:
        """Pack the store, drop checkpoints of gone sessions and past RETENTION.

        Skipped (None) while another operation holds the workspace: this
        runs after a turn, never in the middle of one. See `maintenance`.
        """
        return maintenance.maintain(self.git, self.layout, retention, live, prune_now=prune_now)

    def borrow(self, objects: Path) -> None:
        """Read objects this store lacks from OBJECTS, a repository's object folder.

        For a new parallel tree checked out from its project's commit: no copy
        at creation; the next `maintain` copies what the checkpoints need and
        drops the link (`maintenance.dissociate`). OBJECTS must be a folder
        tandem computed from the project's git, never a path read from files
        of the workspace (`Layout.borrow` checks its form).
        """
        if not isinstance(objects, Path):
            raise TandemError("invalid", f"objects must be a path: {objects!r}")
        with self.layout.locked():
            self.layout.borrow(objects)

    def adopt(self, tree: str, gaps: list[Gap], label: str, *,
              owner: str | None = None) -> Checkpoint:
        """Keep TREE as a checkpoint of the root as it is, without walking the root.

        Only for a root just checked out from TREE by the store's own git,
        whose private index that checkout wrote (`parallel.trees.seed_index`),
        with GAPS the files left out of it, and no file of TREE matching the
        root's ignore rules (the caller knows: a capture would drop such a
        file). So the tracked files count as checked against the ignore rules
        (`IgnoreWatch`), and the next capture compares the root with that
        index as any capture does: a file changed since is captured then.
        """
        label = _check_label(label)
        refs.check_owner(owner)
        if not isinstance(tree, str) or not _ID.match(tree):
            raise TandemError("invalid", f"not a tree id: {tree!r}")
        if not isinstance(gaps, list) or not all(isinstance(g, Gap) for g in gaps):
            raise TandemError("invalid", f"gaps must be a list of gaps: {gaps!r}")
        with self.layout.locked():
            self._recover_locked()
            if not self.layout.index_for("").is_file() or self._excludes:
                raise TandemError("invalid", f"{self.root} was not checked out into this "
                                  "store: take a snapshot")
            self._watch.mark("", self._watch.fingerprint())
            return self._keep_locked(tree, sorted(gaps, key=lambda g: g.path), label, owner)

    def get(self, checkpoint_id: str) -> Checkpoint:
        """The checkpoint CHECKPOINT_ID of this workspace (``not-found`` if none)."""
        if not isinstance(checkpoint_id, str) or not _ID.match(checkpoint_id):
            raise TandemError("invalid", f"not a checkpoint id: {checkpoint_id!r}")
        proc = self.git.run(["cat-file", "commit", checkpoint_id], check=False)
        if proc.returncode != 0:
            raise TandemError("not-found", f"no checkpoint {checkpoint_id} for {self.root}")
        head, _, message = proc.stdout.decode("utf-8", "replace").partition("\n\n")
        tree = head.split("\n", 1)[0].removeprefix("tree ")
        try:
            record = CheckpointRecord.model_validate_json(message)
        except ValidationError as e:
            raise TandemError("invalid", f"{checkpoint_id} is not a tandem checkpoint") from e
        if record.root != str(self.root) and record.root not in self.layout.carried_roots():
            raise TandemError("invalid", f"checkpoint {checkpoint_id} belongs to {record.root}")
        # A checkpoint carried from a moved root (`carry`) is this root's now.
        fields = record.model_dump(exclude={"tandem_checkpoint"})
        fields["root"] = str(self.root)
        return Checkpoint(id=checkpoint_id, tree=tree, **fields)

    def history(self, limit: int = 50) -> list[Checkpoint]:
        """The most recent kept checkpoints, newest first."""
        if not isinstance(limit, int) or limit < 1:
            raise TandemError("invalid", f"limit must be a positive integer: {limit!r}")
        ids = [r.commit for r in refs.kept(self.git)[:limit]]
        # A store from before per-checkpoint refs keeps its older ones chained.
        proc = self.git.run(
            ["rev-list", f"--max-count={limit}", refs.LEGACY_CHAIN, "--"], check=False
        )
        if proc.returncode == 0:
            ids += proc.stdout.decode().split()
        found = [self.get(i) for i in dict.fromkeys(ids)]
        return sorted(found, key=lambda c: c.created, reverse=True)[:limit]

    def paths(self, checkpoint: Checkpoint | str) -> list[str]:
        """Every file path CHECKPOINT captured, sorted (gaps are not among them)."""
        cp = self._resolve(checkpoint)
        out = self.git.run(["ls-tree", "-r", "-z", "--name-only", "--full-tree", cp.tree]).stdout
        return sorted(os.fsdecode(p) for p in out.split(b"\0") if p)

    # -- patches -------------------------------------------------------------

    def diff(
        self,
        start: Checkpoint | str,
        to: Checkpoint | str | None = None,
        *,
        ran_shell: bool = False,
        wrote_outside: Iterable[str] = (),
    ) -> Patch:
        """The patch from START to TO (a later checkpoint, or the root now when None).

        RAN_SHELL and WROTE_OUTSIDE come from the turn (a shell command ran;
        an agent reported writes outside the root); they make the patch
        ``incomplete`` because those changes are not in it. START and TO may be
        the `Checkpoint` objects this store returned: they are not read back.
        """
        if not isinstance(ran_shell, bool):
            raise TandemError("invalid", f"ran_shell must be true or false: {ran_shell!r}")
        outside = [] if isinstance(wrote_outside, str | bytes) else list(wrote_outside)
        if isinstance(wrote_outside, str | bytes) or not all(isinstance(p, str) for p in outside):
            raise TandemError(
                "invalid", f"wrote_outside must be a list of paths: {wrote_outside!r}"
            )
        begin = self._known(start)
        with self.layout.locked():
            self._recover_locked()
            if to is None:
                now = self._capture_locked()
                end_id, end_tree, end_gaps = None, now.tree, now.gaps
            else:
                end = self._known(to)
                end_id, end_tree, end_gaps = end.id, end.tree, end.gaps
            return self._patch(begin, end_id, end_tree, end_gaps, ran_shell, outside)

    def _patch(
        self,
        begin: Checkpoint,
        end_id: str | None,
        end_tree: str,
        end_gaps: list[Gap],
        ran_shell: bool,
        outside: list[str],
    ) -> Patch:
        all_gaps = begin.gaps + end_gaps
        text, cut = "", False
        # Equal trees (a turn that changed nothing): no git call can find a change.
        if begin.tree == end_tree:
            raw, counts = [], {}
        elif not all_gaps:
            # The listing, the counts and the text at once (each diffs the same
            # files; a 1,000-file patch's three took ~3x one's time in a row).
            listing, stat, patch = self.git.run_parallel([
                diffing.raw_args(begin.tree, end_tree, renames=True),
                diffing.numstat_args(begin.tree, end_tree),
                diffing.text_args(begin.tree, end_tree, None)])
            raw, counts = diffing.parse_raw(listing.stdout), diffing.parse_numstat(stat.stdout)
            text, cut = diffing.cut_text(patch.stdout, self.max_diff_chars)
        else:
            raw = diffing.raw_changes(self.git, begin.tree, end_tree, renames=True)
        changes = [
            c for c in raw
            if not diffing.covered(c.path, all_gaps)
            and not (c.old_path and diffing.covered(c.old_path, all_gaps))
        ]
        if all_gaps and changes:
            counts = diffing.numstat(self.git, begin.tree, end_tree)
            paths = sorted({c.path for c in changes} | {c.old_path for c in changes if c.old_path})
            text, cut = diffing.diff_text(self.git, begin.tree, end_tree, paths,
                                          self.max_diff_chars)
        elif all_gaps:
            counts = {}
        gaps = diffing.gap_changes(begin.gaps, end_gaps)
        if ran_shell:
            gaps.append(
                PatchGap(
                    kind="ran-shell",
                    detail="a shell command ran; it may have written outside the root",
                )
            )
        gaps += [
            PatchGap(kind="wrote-outside", path=p, detail="written outside the workspace root")
            for p in outside
        ]
        files = diffing.file_changes(changes, counts)
        completeness: Completeness = "captured" if files else "no-changes"
        if gaps:
            completeness = "incomplete"
        return Patch(
            from_id=begin.id,
            to_id=end_id,
            from_tree=begin.tree,
            to_tree=end_tree,
            files=files,
            diff=text,
            diff_truncated=cut,
            completeness=completeness,
            gaps=gaps,
        )

    # -- restore -------------------------------------------------------------

    def plan_restore(
        self, checkpoint: Checkpoint | str, expected_after: Checkpoint | str | None = None
    ) -> RestorePlan:
        """What restoring CHECKPOINT would do now.

        EXPECTED_AFTER is the latest state tandem knows it left (the capture
        at the end of the newest turn); files whose current state differs
        from it were changed by something else and are listed in
        ``changed_externally``.
        """
        target = self._resolve(checkpoint)
        known = self._resolve(expected_after) if expected_after is not None else None
        with self.layout.locked():
            self._recover_locked()
            now = self._capture_locked()
            changes = diffing.raw_changes(self.git, now.tree, target.tree, renames=False)
            ops = restore_ops(self.root, changes, target.gaps, now.gaps)
            external: list[str] = []
            if known is not None:
                moved = diffing.raw_changes(self.git, known.tree, now.tree, renames=False)
                external = sorted(
                    {c.path for c in moved}
                    | {g.path for g in diffing.gap_changes(known.gaps, now.gaps) if g.path}
                )
            touched = sorted(op.path for op in ops.deletes + ops.writes)
            text, cut = diffing.diff_text(
                self.git, now.tree, target.tree, touched, self.max_diff_chars, renames=False
            )
            return RestorePlan(
                checkpoint_id=target.id,
                current_tree=now.tree,
                to_restore=sorted(op.path for op in ops.writes),
                to_delete=sorted(op.path for op in ops.deletes),
                changed_externally=external,
                gaps=_merge_gaps(ops.gaps, _current_gap_notes(now, target)),
                diff=text,
                diff_truncated=cut,
            )

    def restore(
        self,
        checkpoint: Checkpoint | str,
        *,
        expected_current: str | None = None,
        before_file: FileHook | None = None,
        on_start: Callable[[RestoreStart], None] | None = None,
    ) -> RestoreResult:
        """Bring the root back to CHECKPOINT, all or nothing.

        First the current state is kept as a backup checkpoint; then files
        are restored and files created since are deleted. If anything fails
        midway every touched file is put back and the error is raised
        (``restore-failed``). EXPECTED_CURRENT is `RestorePlan.current_tree`:
        when given and the root changed since the plan, nothing is done
        (``conflict``). BEFORE_FILE is called with each path before it is
        touched (the fault-injection seam of the tests). ON_START is called
        once the backup exists and before any file moves (Rewind records its
        intent there); if it raises, nothing moves and the error propagates.
        """
        target = self._resolve(checkpoint)
        if before_file is not None and not callable(before_file):
            raise TandemError("invalid", "before_file must be callable")
        if expected_current is not None and not _ID.match(str(expected_current)):
            raise TandemError("invalid", f"not a tree id: {expected_current!r}")
        with self.layout.locked():
            self._recover_locked()
            backup = self._snapshot_locked(
                f"before restore to {target.id[:12]}", target.owner, None
            )
            if expected_current is not None and backup.tree != expected_current:
                raise TandemError(
                    "conflict",
                    "the workspace changed since the restore was planned; plan it again",
                    {"backup": backup.id},
                )
            changes = diffing.raw_changes(self.git, backup.tree, target.tree, renames=False)
            ops = restore_ops(self.root, changes, target.gaps, backup.gaps)
            start = RestoreStart(backup=backup.id, target=target.id, token=new_token())
            if on_start is not None:
                on_start(start)
            atomic_write(self.layout.pending, start.model_dump_json().encode() + b"\n")
            try:
                apply(self.git, self.root, ops, before_file, start.token)
            except RollbackFailed as e:
                # The record stays: the next operation retries the rollback.
                e.data = {**e.data, "backup": backup.id}
                raise
            except BaseException as e:
                self.layout.pending.unlink()
                if not isinstance(e, Exception):
                    raise
                raise TandemError(
                    "restore-failed",
                    f"restore failed and was rolled back: {e}",
                    {"backup": backup.id},
                ) from e
            self.layout.pending.unlink()
            return RestoreResult(
                checkpoint_id=target.id,
                backup=backup,
                restored=sorted(op.path for op in ops.writes),
                deleted=sorted(op.path for op in ops.deletes),
                gaps=ops.gaps,
            )

    def recover(self) -> bool:
        """Roll back a restore that a crash interrupted; True when there was one."""
        with self.layout.locked():
            return self._recover_locked() is not None

    def undo_restore(self, backup: str, target: str, token: str | None) -> UndoResult:
        """Put back the files a restore from BACKUP to TARGET (ids) changed.

        For a restore that completed, or was interrupted, in a process that
        died before it could record the outcome (Rewind's recovery). Each path
        the restore could have touched goes back to BACKUP's state when it is
        in TARGET's state now; a path changed since by someone else is left
        (``left``). The restore's temporary files (TOKEN) are removed first.
        A safety checkpoint of the files just before is kept (``safety``).
        """
        first = self._resolve(backup)
        last = self._resolve(target)
        with self.layout.locked():
            interrupted = self._recover_locked()
            result = self._undo_locked(first, last, token)
        if interrupted is None:
            return result
        removed = sorted(set(result.temp_removed) | set(interrupted.temp_removed))
        return result.model_copy(update={
            "put_back": sorted(set(result.put_back) | set(interrupted.put_back)),
            "safety": interrupted.safety or result.safety,
            "temp_removed": removed,
        })

    def sweep_restore(self, backup: str, target: str, token: str) -> list[str]:
        """Remove the temporary files the restore TOKEN (BACKUP to TARGET) left; their names."""
        ops = undo.planned_ops(self.git, self._resolve(backup), self._resolve(target))
        with self.layout.locked():
            self._recover_locked()
            return undo.sweep(self.root, ops, token)

    # -- internals -----------------------------------------------------------

    def _recover_locked(self) -> UndoResult | None:
        """Roll back the restore ``restore.json`` names (None when there is none)."""
        if not self.layout.pending.exists():
            return None
        try:
            record = json.loads(self.layout.pending.read_text())
            backup, target = self.get(record["backup"]), self.get(record["target"])
            token = record.get("token")
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise TandemError(
                "restore-failed",
                f"an interrupted restore left an unreadable record: {self.layout.pending}",
            ) from e
        result = self._undo_locked(backup, target, token if isinstance(token, str) else None)
        self.layout.pending.unlink()
        return result

    def _undo_locked(
        self, backup: Checkpoint, target: Checkpoint, token: str | None
    ) -> UndoResult:
        ops = undo.planned_ops(self.git, backup, target)
        removed = undo.sweep(self.root, ops, token)
        now = self._snapshot_locked(
            f"before undoing the restore to {target.id[:12]}", backup.owner, None
        )
        put_back, left = undo.undo(self.git, self.root, ops, now, target, backup, token)
        return UndoResult(safety=now.id, put_back=put_back, left=left, temp_removed=removed)

    def _capture_locked(self) -> Capture:
        try:
            return capture(self.git, self.layout, self.size_cap, self._excludes, self._watch)
        except OSError as e:
            raise TandemError("checkpoint-failed", f"cannot capture {self.root}: {e}") from e

    def keep(self, tree: str, gaps: list[Gap], label: str, owner: str | None = None,
             turn: int | None = None) -> Checkpoint:
        """Keep TREE (already in the store, e.g. a derived one) as a checkpoint with GAPS."""
        label = _check_label(label)
        with self.layout.locked():
            return self._keep_locked(tree, gaps, label, owner, turn)

    def _snapshot_locked(
        self, label: str, owner: str | None = None, turn: int | None = None
    ) -> Checkpoint:
        now = self._capture_locked()
        return self._keep_locked(now.tree, now.gaps, label, owner, turn)

    def _keep_locked(self, tree: str, gaps: list[Gap], label: str, owner: str | None = None,
                     turn: int | None = None) -> Checkpoint:
        record = CheckpointRecord(
            label=label, created=datetime.now(UTC), root=str(self.root), gaps=gaps,
            owner=owner, turn=turn,
        )
        # Parentless, kept by a ref of its own (refs.py): one can be dropped
        # without the others. The ref publishes record and snapshot at once.
        commit = self.git.out(["commit-tree", tree], input=record.model_dump_json().encode())
        self.git.run(["update-ref", refs.ref_of(refs.check_owner(owner), commit), commit,
                      "0" * 40])
        return Checkpoint(
            id=commit, tree=tree, **record.model_dump(exclude={"tandem_checkpoint"})
        )

    def _known(self, checkpoint: Checkpoint | str) -> Checkpoint:
        """CHECKPOINT as is when it is one of this root's (read-only uses: a patch);
        else looked up (`get`). Saves a git process per checkpoint of a turn."""
        if isinstance(checkpoint, Checkpoint) and checkpoint.root == str(self.root):
            return checkpoint
        return self._resolve(checkpoint)

    def _resolve(self, checkpoint: Checkpoint | str) -> Checkpoint:
        if isinstance(checkpoint, Checkpoint):
            checkpoint = checkpoint.id
        return self.get(checkpoint)


def _global_excludes(configured: str | None) -> Path:
    """The user's global excludes file: configured, else git's XDG default."""
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(xdg) / "git" / "ignore"


def _literal_pattern(path: str) -> str:
    """PATH as a gitignore pattern that matches only itself."""
    escaped = re.sub(r"([\\*?\[\]!#])", r"\\\1", path)
    return escaped[:-1] + "\\ " if escaped.endswith(" ") else escaped


def _check_label(label: str) -> str:
    if not isinstance(label, str):
        raise TandemError("invalid", f"checkpoint label must be a string: {label!r}")
    if "\0" in label or len(label) > _MAX_LABEL:
        raise TandemError(
            "invalid", f"checkpoint label must be under {_MAX_LABEL} characters, no NUL"
        )
    return label


def _merge_gaps(first: list[RestoreGap], more: list[RestoreGap]) -> list[RestoreGap]:
    seen = {g.path for g in first}
    return sorted(first + [g for g in more if g.path not in seen], key=lambda g: g.path)


def _current_gap_notes(now: Capture, target: Checkpoint) -> list[RestoreGap]:
    """Paths uncaptured now and absent from the checkpoint: left in place."""
    known = {g.path for g in target.gaps}
    return [
        RestoreGap(
            path=g.path,
            kind="gap-now",
            detail=f"{g.reason} now; not captured, so not deleted or backed up",
        )
        for g in now.gaps
        if g.path not in known
    ]
