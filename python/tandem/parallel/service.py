"""Parallel sessions: create one in its own tree, show its change, land it, remove it.

`ParallelService.create` makes the tree (`trees`), a session rooted there
and a record (`records`). `patch` is the tree's change against its base
checkpoint. `land` runs one turn of the project's own session whose runner
(`LandingRunner`) writes the parts taken (`landing`), so the engine's
checkpoints bracket it and Rewind of that turn undoes it. `remove` deletes
the tree and the ``tandem/NAME`` branch; the journal and the record stay.
A parallel session of a session that runs on an agent-server host is made
there (`on_host`): `make` chooses.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from tandem.checkpoints.checkpointer import Checkpointer
from tandem.checkpoints.git import Git
from tandem.checkpoints.service import CheckpointService
from tandem.parallel import bestof, landing, records, trees
from tandem.parallel.on_host import HostParallel
from tandem.protocol.base import TandemError
from tandem.protocol.checkpoints import Patch
from tandem.protocol.parallel import (
    LAND_PROVIDER,
    BestOf,
    BestOfRun,
    Created,
    Landed,
    LandedPart,
    ParallelPatch,
    ParallelRecord,
    ParallelSummary,
    ParallelTestResult,
    Place,
)
from tandem.providers.base import Conversation, TurnRequest, TurnResult, TurnSink
from tandem.remote.target_file import has_target
from tandem.sessions.gate import SessionGate
from tandem.sessions.projection import visible_turns
from tandem.sessions.service import SessionService
from tandem.turns.engine import TurnEngine, TurnSpec, run_blocking

if TYPE_CHECKING:
    from tandem.remote.checkpoints import RemoteCheckpoints


def default_folder(project: Path) -> Path:
    """Where parallel trees of PROJECT go by default: ``<project>/../<name>.tandem-worktrees``."""
    return project.parent / f"{project.name}.tandem-worktrees"


class LandingRunner:
    """Runs a landing as a turn: WORK writes the files and returns the turn's message."""

    name = LAND_PROVIDER

    def __init__(self, work: Callable[[], Awaitable[str]]) -> None:
        self._work = work

    @property
    def conversation(self) -> Conversation | None:
        """A landing keeps no conversation."""
        return None

    @property
    def conversation_id(self) -> str | None:
        """A landing keeps no conversation."""
        return None

    def reset_conversation(self, conversation_id: str | None = None) -> None:
        """Nothing to reset."""

    async def image_refusal(self, root: Path) -> str | None:
        """A landing carries no request, so no image."""
        return "a landing takes no images"

    async def run(self, request: TurnRequest, sink: TurnSink) -> TurnResult:
        """Write the landing; its sentence is the turn's answer."""
        sink.text(await self._work())
        return TurnResult(outcome="succeeded")

    async def close(self) -> None:
        """Nothing to release."""


class ParallelService:
    """Every parallel session of one backend."""

    def __init__(self, home: Path, sessions: SessionService, engine: TurnEngine,
                 checkpoints: CheckpointService, gate: SessionGate,
                 remote: Callable[[], RemoteCheckpoints] | None = None) -> None:
        self.home = home
        self.sessions = sessions
        self.engine = engine
        self.checkpoints = checkpoints
        self.gate = gate
        self._followers: set[asyncio.Task[None]] = set()
        self.host = HostParallel(home, sessions, checkpoints, remote or self._no_remote)
        """The parallel sessions on agent-server hosts (REMOTE: the app's remote side)."""

    @staticmethod
    def _no_remote() -> RemoteCheckpoints:
        raise TandemError("unsupported", "This backend has no remote side")

    # -- create --------------------------------------------------------------

    async def make(self, project: str, name: str, parent_session: str | None, carry: bool,
                   directory: str | None, place: Place = "auto") -> Created:
        """Make parallel session NAME of PROJECT where PLACE says (`create` locally).

        On a host (``remote``, or ``auto`` for a session that runs on one) the
        tree goes beside the host's project; DIRECTORY is for local trees."""
        trees.check_name(name)
        root, parent = self._project_of(project, parent_session)
        if place != "local" and parent is not None and has_target(self.home, parent):
            return await self.host.create(root, name, parent, carry)
        made: Created = await run_blocking(lambda: self.create(
            project, name, parent_session, carry, directory, place))
        return made

    def _project_of(self, project: str, parent_session: str | None
                    ) -> tuple[Path, str | None]:
        """PROJECT's main tree and its session: a parallel tree or session names its own."""
        root = Path(project).expanduser()
        if not root.is_absolute() or not root.is_dir():
            raise TandemError("invalid", f"Not a project directory: {project}")
        root = root.resolve()
        # From a parallel session's tree, or naming one as parent: its project's.
        for r in records.every(self.home):
            if not r.removed and r.host is None and Path(r.worktree) == root:
                root, parent_session = Path(r.project), r.parent_session
                break
        parent_record = records.read(self.home, parent_session) if parent_session else None
        if parent_record is not None:
            parent_session = parent_record.parent_session
        return root, parent_session

    def create(self, project: str, name: str, parent_session: str | None, carry: bool,
               directory: str | None, place: Place = "auto") -> Created:
        """Make parallel session NAME of PROJECT here (blocking: run it in a thread)."""
        trees.check_name(name)
        root, parent_session = self._project_of(project, parent_session)
        self._check_place(place, parent_session)
        dest = (Path(directory).expanduser() if directory else default_folder(root)) / name
        if not dest.is_absolute():
            raise TandemError("invalid", f"The parallel sessions' folder must be absolute: "
                              f"{directory}")
        if dest.exists():
            raise TandemError("exists", f"{dest} exists already: choose another name")
        if dest.is_relative_to(root):
            raise TandemError("invalid", f"{dest} is inside the project: choose a folder "
                              "outside it")
        main = self.checkpoints.for_root(root)
        git_dir = trees.git_dir_of(root)
        branch = commit = None
        dirty: list[str] = []
        now: trees.Listing = {}
        if git_dir is not None:
            user = Git.of_user_repository(git_dir)
            commit = trees.head_commit(user)

            def main_tree() -> tuple[list[str], trees.Listing]:
                snap = main.snapshot(f"parallel {name}: the main tree", owner=parent_session)
                return trees.uncommitted(main, snap.tree, user, commit)

            # The main tree's checkpoint runs beside the worktree's making (the other
            # core); its verdict comes before any file is written.
            with ThreadPoolExecutor(1) as pool:
                checked = pool.submit(main_tree)

                def ready() -> None:
                    found, _ = checked.result()
                    if found and not carry:
                        shown = ", ".join(found[:5]) + (" …" if len(found) > 5 else "")
                        raise TandemError(
                            "conflict", f"The project has uncommitted changes ({len(found)} "
                            f"files: {shown}); commit them first, or carry them over as the "
                            "parallel session's first checkpoint", {"dirty": found})

                branch = trees.BRANCH_PREFIX + name
                try:
                    trees.add_worktree(user, dest, branch, commit, self.checkpoints.for_root,
                                       ready)
                finally:
                    checked.exception()  # never leave it running behind a refusal
                dirty, now = checked.result()
        else:
            snap = main.snapshot(f"parallel {name}: the main tree", owner=parent_session)
            trees.make_copy(main, snap.tree, dest)
        try:
            active = self.sessions.manager.new(str(dest), f"parallel {name}")
            sid = active.journal.id
            tree = self.checkpoints.for_root(dest)
            base = tree.snapshot(f"parallel {name}: base", owner=sid)
            carried = None
            if dirty:
                trees.carry(main, now, dirty, dest)
                carried = tree.snapshot(f"parallel {name}: carried over", owner=sid).id
        except BaseException:
            self._remove_tree(dest, branch)
            raise
        record = ParallelRecord(
            session=sid, name=name, project=str(root), parent_session=parent_session,
            worktree=str(tree.root), kind="worktree" if branch else "copy", branch=branch,
            base_commit=commit, base_checkpoint=base.id, carried_checkpoint=carried,
            created=dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"))
        records.write(self.home, record)
        return Created(record=record, path=str(active.journal.path), carried=dirty)

    def _remove_tree(self, dest: Path, branch: str | None) -> None:
        if branch is not None:
            git_dir = trees.git_dir_of(dest)
            common = git_dir.parent.parent if git_dir is not None else None
            if common is not None:
                trees.remove_worktree(Git.of_user_repository(common), dest, branch)
        else:
            trees.remove_copy(dest)

    # -- reading -------------------------------------------------------------

    def record(self, session: str) -> ParallelRecord:
        """SESSION's record (``not-found`` for a session that is not parallel).

        Its ``landed`` holds the landings whose turn the main session still shows:
        a landing undone by a Rewind there is no landing.
        """
        return self._live(records.get(self.home, session))

    def _live(self, record: ParallelRecord) -> ParallelRecord:
        hidden: dict[str, set[int]] = {}
        for part in record.landed:
            if part.session and part.session not in hidden:
                try:
                    entries = self.sessions.entries(self.sessions.journal(part.session))
                    hidden[part.session] = visible_turns(entries)[1]
                except TandemError:
                    hidden[part.session] = set()
        record.landed = [p for p in record.landed if p.turn not in hidden.get(p.session, set())]
        return record

    @staticmethod
    def _all_landed(record: ParallelRecord, patch: Patch) -> bool:
        """Whether every file of PATCH was landed whole from the tree as it is now."""
        whole = {p.path for p in record.landed if p.tree == patch.to_tree and p.hunk is None}
        return all(f.path in whole for f in patch.files)

    def records(self, project: str | None = None) -> list[ParallelRecord]:
        """Every parallel session's record (only PROJECT's when given), newest first."""
        found = records.every(self.home)
        if project is not None:
            wanted = str(Path(project).expanduser().resolve())
            found = [r for r in found if r.project == wanted]
        return found

    def _tree(self, record: ParallelRecord) -> Checkpointer:
        if record.removed:
            raise TandemError("invalid", f"Parallel session {record.name} was removed")
        if record.host is not None:
            return self.host.tree(record)
        return self.checkpoints.for_root(record.worktree)

    async def refresh(self, session: str) -> None:
        """Bring SESSION's tree up to date where it is kept (a host's: its mirror)."""
        record = self.record(session)
        if record.host is not None and not record.removed:
            await self.host.sync(record)

    def patch(self, session: str) -> ParallelPatch:
        """SESSION's whole change against its base (blocking)."""
        record = self.record(session)
        patch = self._tree(record).diff(record.base_checkpoint)
        return ParallelPatch(session=session, name=record.name,
                             root=record.mirror or record.worktree, project=record.project,
                             patch=patch, landed=record.landed, host=record.host,
                             worktree=record.worktree)

    def summaries(self) -> dict[str, ParallelSummary]:
        """Every parallel session as the overview shows it, by session id (blocking)."""
        out: dict[str, ParallelSummary] = {}
        for r in map(self._live, records.every(self.home)):
            summary = ParallelSummary(name=r.name, project=r.project, worktree=r.worktree,
                                      kind=r.kind, branch=r.branch, base_commit=r.base_commit,
                                      state="removed" if r.removed else "", host=r.host)
            # A host's tree is read from its mirror as its last sync left it.
            if not r.removed and Path(r.mirror or r.worktree).is_dir():
                try:
                    patch = self._tree(r).diff(r.base_checkpoint)
                except TandemError:
                    patch = None
                if patch is not None:
                    summary.files = len(patch.files)
                    summary.additions = sum(f.additions or 0 for f in patch.files)
                    summary.deletions = sum(f.deletions or 0 for f in patch.files)
                    if patch.files:
                        summary.state = ("landed" if self._all_landed(r, patch)
                                         else "ready")
            out[r.session] = summary
        return out

    def _check_place(self, place: Place, parent_session: str | None) -> None:
        """Refuse a PLACE this backend cannot make, before any file is written."""
        remote = parent_session is not None and has_target(self.home, parent_session)
        if place == "remote" and not remote:
            raise TandemError("invalid", "place remote: the project's session has no "
                              "agent-server; use place local (or auto)")
        if place != "local" and remote:
            # Why refused rather than made locally: a local tree of a remote project would
            # hold none of the host's files. `make` builds them on the host.
            raise TandemError("unsupported", "The project's session runs on an agent-server "
                              "host: its parallel sessions are made there one at a time "
                              "(parallel/create); best-of-N on a host is not built yet")

    # -- landing -------------------------------------------------------------

    def _main_session(self, record: ParallelRecord) -> str:
        if record.parent_session:
            return record.parent_session
        for row in self.sessions.manager.list(record.project):
            if not row.damaged and records.read(self.home, row.id) is None:
                return row.id
        return self.sessions.manager.new(record.project).journal.id

    async def land(self, session: str, path: str | None, hunk: int | None,
                   hunk_header: str | None, paths: list[str]) -> Landed:
        """Land the named parts of SESSION's change as one turn of the project's session."""
        record = self.record(session)
        holder = self.gate.holder(session)
        if holder is not None:
            raise TandemError("busy", f"Parallel session {record.name} is busy "
                              f"({holder.purpose}): land it when it is idle")
        tree = self._tree(record)
        main = self._main_session(record)
        if record.host is not None:
            self.host.check_main(record, main)
            await self.host.sync(record)
        elif has_target(self.home, main):
            raise TandemError("unsupported", "The project's session runs on a remote host: "
                              "detach it to land a parallel session into the project")
        now = await run_blocking(
            lambda: tree.snapshot(f"parallel {record.name}: landing", owner=session))
        patch = await run_blocking(lambda: tree.diff(record.base_checkpoint, now))
        takes = landing.select(patch, path, hunk, hunk_header, paths)
        if not takes:
            raise TandemError("invalid", f"Parallel session {record.name} changed nothing "
                              "to land")
        base = await run_blocking(tree.get, record.base_checkpoint)
        versions = await run_blocking(lambda: landing.prepare(tree, base.tree, now.tree, takes))
        done: list[landing.Outcome] = []

        label = record.branch or f"tandem/{record.name}"

        async def work() -> str:
            out: landing.Outcome
            if record.host is not None:  # the main tree is the host's: its mirror, pushed
                out = await self.host.land(main, versions, tree, label)
            else:
                out = await run_blocking(lambda: landing.land(
                    tree.git, versions, Path(record.project), label))
            done.append(out)
            return out.sentence(record.name)

        what = (f"hunk {hunk + 1} of {path}" if path is not None and hunk is not None
                else path if path is not None else ", ".join(paths) if paths
                else "every file")
        turn = await self.engine.accept(TurnSpec(
            session=main, text=f"Land parallel session {record.name}: {what}",
            provider=LAND_PROVIDER, permission_mode="auto-edit", messages=[],
            runner=LandingRunner(work)))
        ended = await self.engine.wait(main, turn)
        out = done[0] if done else landing.Outcome()
        if ended.outcome == "succeeded":
            fresh = records.get(self.home, session)
            fresh.landed += [LandedPart(path=t.file.path, hunk=t.hunk, session=main, turn=turn,
                                        tree=now.tree) for t in takes]
            records.write(self.home, fresh)
        return Landed(session=main, turn=turn, outcome=ended.outcome, error=ended.error,
                      project=record.project, written=out.written, deleted=out.deleted,
                      conflicts=out.conflicts, kept=out.kept)

    # -- best-of-N and tests ----------------------------------------------------

    async def test(self, session: str, command: list[str], timeout: float
                   ) -> ParallelTestResult:
        """Run the user's test COMMAND in SESSION's tree (at most TIMEOUT seconds)."""
        record = self.record(session)
        self._tree(record)  # refuses a removed one
        if record.host is not None:
            raise TandemError("unsupported", f"Parallel session {record.name} is on "
                              f"{record.host}: running a test there is not built yet")
        return await bestof.run_test(self.home, session, Path(record.worktree), command,
                                     timeout)

    def start_group(self, project: str, text: str, test_command: list[str] | None,
                    test_timeout: float) -> BestOf:
        """A new best-of-N group of PROJECT (its runs are added by `add_run`)."""
        now = dt.datetime.now(dt.UTC)
        group = BestOf(group=now.strftime("best-%Y%m%d-%H%M%S-%f"), project=project, text=text,
                       created=now.isoformat(timespec="milliseconds"),
                       test_command=test_command, test_timeout=test_timeout)
        bestof.write_group(self.home, group)
        return group

    def add_run(self, group: BestOf, run: BestOfRun) -> None:
        """Keep RUN (its turn accepted) in GROUP and follow it: at its end, its test.

        The group file is read again first: a follower may have written it since."""
        group.runs.append(run)
        kept = bestof.read_group(self.home, group.group)
        kept.runs.append(run)
        bestof.write_group(self.home, kept)
        task = asyncio.get_running_loop().create_task(self._follow(group.group, run.session,
                                                                   run.turn))
        self._followers.add(task)
        task.add_done_callback(self._followers.discard)

    def _update(self, group: str, session: str, **changes: object) -> None:
        # Read, change, write with no await between: followers share the loop.
        kept = bestof.read_group(self.home, group)
        for run in kept.runs:
            if run.session == session:
                for k, v in changes.items():
                    setattr(run, k, v)
        bestof.write_group(self.home, kept)

    async def _follow(self, group: str, session: str, turn: int) -> None:
        ended = await self.engine.wait(session, turn)
        kept = bestof.read_group(self.home, group)
        testing = bool(kept.test_command) and ended.outcome != "aborted"
        self._update(group, session, state="testing" if testing else "ended",
                     outcome=ended.outcome, error=ended.error,
                     answer=ended.answer[:bestof.ANSWER_CHARS])
        if testing and kept.test_command:
            self._update(group, session, test=ParallelTestResult(
                session=session, command=kept.test_command, state="running"))
            try:
                result = await self.test(session, kept.test_command, kept.test_timeout)
            except TandemError as e:
                result = ParallelTestResult(session=session, command=kept.test_command,
                                            exit_status=None, output=e.message)
            self._update(group, session, state="ended", test=result)

    async def settled(self) -> None:
        """Wait until every followed run (its turn, then its test) has ended."""
        while self._followers:
            await asyncio.gather(*list(self._followers), return_exceptions=True)

    def compare(self, group: str) -> BestOf:
        """GROUP with each result's change counted from its tree now (blocking)."""
        kept = bestof.read_group(self.home, group)
        for run in kept.runs:
            try:
                patch = self.patch(run.session).patch
            except TandemError:
                continue
            run.files = len(patch.files)
            run.additions = sum(f.additions or 0 for f in patch.files)
            run.deletions = sum(f.deletions or 0 for f in patch.files)
        return kept

    # -- removing ------------------------------------------------------------

    async def discard(self, session: str, force: bool) -> ParallelRecord:
        """Remove SESSION's tree and branch wherever it is (`remove` for a local one)."""
        record = self.record(session)
        if record.host is None or record.removed:
            done: ParallelRecord = await run_blocking(self.remove, session, force)
            return done
        self._check_idle(record)
        try:
            await self.host.sync(record)
        except TandemError:
            pass  # a tree removed by hand: the check reads the mirror as last synced
        await run_blocking(self._check_landed, record, force)
        if record.session in self.sessions.manager.journals:
            self.sessions.manager.close(record.session)
        await self.host.remove(record)
        record.removed = True
        records.write(self.home, record)
        return record

    def _check_idle(self, record: ParallelRecord) -> None:
        holder = self.gate.holder(record.session)
        if holder is not None:
            raise TandemError("busy", f"Parallel session {record.name} is busy "
                              f"({holder.purpose}): remove it when it is idle")

    def _check_landed(self, record: ParallelRecord, force: bool) -> None:
        if not force and Path(record.mirror or record.worktree).is_dir():
            patch = self._tree(record).diff(record.base_checkpoint)
            if not self._all_landed(record, patch):
                raise TandemError("conflict", f"Parallel session {record.name} has changes "
                                  "that were never landed; remove it anyway?",
                                  {"unlanded": [f.path for f in patch.files]})

    def remove(self, session: str, force: bool) -> ParallelRecord:
        """Remove SESSION's local tree and branch; its journal and record stay (blocking)."""
        record = self.record(session)
        if record.removed:
            return record
        if record.host is not None:
            raise TandemError("invalid", f"Parallel session {record.name} is on {record.host}: "
                              "remove it with `discard`")
        self._check_idle(record)
        self._check_landed(record, force)
        if session in self.sessions.manager.journals:
            self.sessions.manager.close(session)
        if record.kind == "worktree" and record.branch:
            git_dir = trees.git_dir_of(Path(record.project))
            if git_dir is None:
                raise TandemError("not-found", f"{record.project} is no git repository now")
            trees.remove_worktree(Git.of_user_repository(git_dir), Path(record.worktree),
                                  record.branch)
        else:
            trees.remove_copy(Path(record.worktree))
        record.removed = True
        records.write(self.home, record)
        return record
