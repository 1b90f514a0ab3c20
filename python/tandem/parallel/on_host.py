"""Parallel sessions on an agent-server host: the parts of `ParallelService` that reach it.

A parallel session of a remote session (its *main* session) has its tree on
the same host, beside the host's project (`host_trees`). It is a remote
session itself: its target is the main session's with the tree as working
dir, so its turns run there and its checkpoints are of a private mirror of
the tree (`tandem.remote.checkpoints`), like any remote session's. Its base
checkpoint is that mirror just after the tree was made.

Landing writes into the main session's *mirror* and pushes the files it
wrote or deleted to the host (``tandem.remote.push``: uploads, confined
deletes), inside the main session's landing turn, whose checkpoints are the
main mirror's (synced from the host before and after): so the landing is one
turn of the main remote session and its Rewind puts the host's files back
as any remote Rewind does. The paths to push are recorded before any mirror
file moves, so a crash leaves them to the next sync's push. A file the main
mirror cannot hold (over the size cap, unreadable there) is never written
nor pushed: it is kept, as a file changed on both sides is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tandem.checkpoints.checkpointer import Checkpointer
from tandem.checkpoints.service import CheckpointService
from tandem.parallel import host_trees, landing, records, trees
from tandem.protocol.base import TandemError
from tandem.protocol.parallel import Created, ParallelRecord
from tandem.sessions.service import SessionService
from tandem.turns.engine import run_blocking

if TYPE_CHECKING:
    from tandem.protocol.remote import RemoteTarget
    from tandem.remote.checkpoints import RemoteCheckpoints

GIT_LINK = ".git"
"""A worktree's ``.git`` file: mirrored (the mirror skips ``.git`` folders only), never a
change nor an uncommitted file."""


class HostParallel:
    """Making, syncing, landing and removing parallel trees on agent-server hosts."""

    def __init__(self, home: Path, sessions: SessionService, checkpoints: CheckpointService,
                 remote: Callable[[], RemoteCheckpoints]) -> None:
        self.home = home
        self.sessions = sessions
        self.checkpoints = checkpoints
        self._remote = remote

    @property
    def remote(self) -> RemoteCheckpoints:
        """The remote side (built on first use by the app)."""
        return self._remote()

    def target(self, session: str) -> RemoteTarget | None:
        """SESSION's agent-server target, or None."""
        return self.remote.remote.target(session)

    # -- create --------------------------------------------------------------

    async def create(self, project: Path, name: str, parent: str, carry: bool) -> Created:
        """Make parallel session NAME of the remote session PARENT on its host."""
        trees.check_name(name)
        found = self.remote.remote.session_client(parent)
        if found is None:
            raise TandemError("invalid", "place remote: the project's session has no "
                              "agent-server; use place local (or auto)")
        target, client = found
        async with client:
            made = await host_trees.make(client, target.resolved_working_dir, name,
                                         target.host)
        sid: str | None = None
        try:
            cwd = self.sessions.journal(parent).header.cwd
            active = self.sessions.manager.new(cwd, f"parallel {name}")
            sid = active.journal.id
            self.remote.remote.attach_beside(sid, parent, made.path)
            mirror, _ = await self.remote.sync(sid)
            tree = self.checkpoints.for_root(mirror.root)
            base = await run_blocking(lambda: tree.snapshot(f"parallel {name}: base",
                                                            owner=sid))
            dirty: list[str] = []
            carried = None
            if made.kind == "worktree":
                dirty, main, now = await self._uncommitted(parent, name, tree, base.tree)
                if dirty and not carry:
                    shown = ", ".join(dirty[:5]) + (" …" if len(dirty) > 5 else "")
                    raise TandemError(
                        "conflict", f"The project on {target.host} has uncommitted changes "
                        f"({len(dirty)} files: {shown}); commit them first, or carry them "
                        "over as the parallel session's first checkpoint", {"dirty": dirty})
                if dirty:
                    await run_blocking(lambda: trees.carry(main, now, dirty, mirror.root))
                    await self._push(sid, mirror.root, made.path, dirty)
                    mirror, _ = await self.remote.sync(sid)
                    carried = (await run_blocking(lambda: tree.snapshot(
                        f"parallel {name}: carried over", owner=sid))).id
        except BaseException:
            await self._unmake(target, made, name, sid)
            raise
        record = ParallelRecord(
            session=sid, name=name, project=str(project), parent_session=parent,
            worktree=made.path, kind=made.kind, branch=made.branch,
            base_commit=made.base_commit, base_checkpoint=base.id, carried_checkpoint=carried,
            created=dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
            host=target.host, remote_root=host_trees.check_root(target.resolved_working_dir),
            mirror=str(mirror.root))
        records.write(self.home, record)
        return Created(record=record, path=str(active.journal.path), carried=dirty)

    async def _uncommitted(self, parent: str, name: str, tree: Checkpointer, base_tree: str
                           ) -> tuple[list[str], Checkpointer, trees.Listing]:
        """Paths where the host's project differs from the new tree (its HEAD's files).

        Both are mirrors captured the same way (same excludes and cap), and blob
        ids are content hashes, so the two listings compare path by path."""
        main_mirror, _ = await self.remote.sync(parent)
        main = self.checkpoints.for_root(main_mirror.root)
        snap = await run_blocking(lambda: main.snapshot(f"parallel {name}: the main tree",
                                                        owner=parent))
        now = await run_blocking(lambda: trees.listing(main.git, snap.tree))
        then = await run_blocking(lambda: trees.listing(tree.git, base_tree))
        dirty = sorted(p for p in set(now) | set(then)
                       if p != GIT_LINK and now.get(p) != then.get(p))
        return dirty, main, now

    async def _push(self, session: str, mirror_root: Path, working_dir: str,
                    paths: list[str]) -> None:
        """Make PATHS of SESSION's working dir on the host equal to its mirror."""
        if self.remote.mirror(session).root != mirror_root:
            raise TandemError("invalid", f"{mirror_root} is not session {session}'s mirror")
        result = await self.remote.push(session, working_dir, paths)
        if result.failed:
            target = self.target(session)
            raise TandemError("remote-failed", f"Files not written on "
                              f"{target.host if target else 'the host'}: "
                              f"{', '.join(result.failed)} ({'; '.join(result.errors)}); "
                              "they are pushed again before the next sync")

    async def _unmake(self, target: RemoteTarget, made: host_trees.HostTree, name: str,
                      sid: str | None) -> None:
        """Undo a creation that failed after the tree was made: the tree, the target."""
        if sid is not None:
            self.remote.remote.detach(sid)
        found = self.remote.remote.session_client(target.session)
        if found is None:
            return
        _, client = found
        async with client:
            try:
                await host_trees.remove(client, target.resolved_working_dir, name, made.path,
                                        made.kind, made.branch, target.host)
            except TandemError:
                pass  # the creation's error is the one the user needs

    # -- the tree and its mirror ---------------------------------------------------

    def tree(self, record: ParallelRecord) -> Checkpointer:
        """The checkpoints of RECORD's tree: its mirror's."""
        if not record.mirror:
            raise TandemError("corrupt", f"Parallel session {record.name}'s record names no "
                              "mirror")
        return self.checkpoints.for_root(record.mirror)

    async def sync(self, record: ParallelRecord) -> None:
        """Bring RECORD's mirror up to date with its tree on the host."""
        mirror, _ = await self.remote.sync(record.session)
        if str(mirror.root) != record.mirror:
            raise TandemError("invalid", f"Parallel session {record.name} is attached "
                              f"elsewhere now; attach it to {record.host}:{record.worktree}")

    def check_main(self, record: ParallelRecord, main: str) -> None:
        """Refuse a landing of RECORD into MAIN unless MAIN runs in the tree's own project."""
        target = self.target(main)
        if (target is None or target.host != record.host
                or target.resolved_working_dir.rstrip("/") != record.remote_root):
            raise TandemError("unsupported", f"Parallel session {record.name} is on "
                              f"{record.host}:{record.worktree}; the project's session no longer "
                              f"runs in {record.host}:{record.remote_root}, and landing a "
                              "host's tree elsewhere is not built: attach it there again")

    async def land(self, main: str, versions: list[landing.Version], git_of: Checkpointer,
                   label: str) -> landing.Outcome:
        """Write VERSIONS into MAIN's mirror, then push what was written to the host.

        Runs inside MAIN's landing turn: its checkpoints bracket the writes."""
        mirror, synced = await self.remote.sync(main)
        target = self.target(main)
        if target is None:
            raise TandemError("not-found", f"session {main} has no remote target")
        gaps = {g.path for g in synced.gaps if g.reason != "excluded"}
        out = landing.Outcome()
        take = []
        for v in versions:
            if v.path in gaps or v.path == GIT_LINK or v.mode == "120000":
                out.kept.append(v.path)  # not in the mirror: writing it blind could lose data
            else:
                take.append(v)
        wd = target.resolved_working_dir.rstrip("/")
        # Recorded before any mirror file moves: a crash leaves them to the next sync's push.
        self.remote.record_push(main, wd, sorted({v.path for v in take}))
        written = await run_blocking(lambda: landing.land(git_of.git, take, mirror.root, label))
        for name in ("written", "deleted", "conflicts", "kept", "unchanged"):
            getattr(out, name).extend(getattr(written, name))
        await self._push(main, mirror.root, wd, written.written + written.deleted
                         + written.conflicts)
        return out

    # -- removing ------------------------------------------------------------

    async def remove(self, record: ParallelRecord) -> None:
        """Remove RECORD's tree (and its ``tandem/NAME`` branch) on the host, nothing else."""
        if not record.remote_root or not record.host:
            raise TandemError("corrupt", f"Parallel session {record.name}'s record names no "
                              "host project")
        found = None
        for session in (record.session, record.parent_session):
            target = self.target(session) if session else None
            if target is not None and target.host == record.host:
                found = self.remote.remote.session_client(target.session)
                break
        if found is None:
            raise TandemError("not-found", f"Neither parallel session {record.name} nor its "
                              f"project's session is attached to {record.host} now: attach "
                              "one again to remove the tree there")
        _, client = found
        async with client:
            await host_trees.remove(client, record.remote_root, record.name, record.worktree,
                                    record.kind, record.branch, record.host)
