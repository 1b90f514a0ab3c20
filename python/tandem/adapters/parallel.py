"""Parallel-session methods (``parallel/…``): create, list, patch, land, remove.

``parallel/create`` makes a session in its own tree (a git worktree on
``tandem/NAME``, or a copy); a main tree with uncommitted changes is refused
(``conflict``, ``data.dirty``) unless ``carry``. ``parallel/patch`` is its
whole change against its base; ``parallel/land`` writes parts of it into the
main tree as one turn of the project's session; ``parallel/remove`` deletes
the tree and the branch, keeping the journal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.history.chat import send as send_chat
from tandem.protocol.base import MethodSpec
from tandem.protocol.parallel import (
    BestOf,
    BestOfParams,
    BestOfRun,
    Created,
    CreateParams,
    GroupParams,
    Landed,
    LandParams,
    ListParams,
    ParallelPatch,
    ParallelRecord,
    ParallelTestParams,
    ParallelTestResult,
    Records,
    RemoveParams,
    SessionParams,
)
from tandem.turns.engine import run_blocking

if TYPE_CHECKING:
    from tandem.app import App


async def create(app: App, p: CreateParams) -> Created:
    """Handler of ``parallel/create``."""
    return await app.parallel.make(p.project, p.name, p.parent_session, p.carry, p.directory,
                                   p.place)


async def list_(app: App, p: ListParams) -> Records:
    """Handler of ``parallel/list``."""
    return Records(records=app.parallel.records(p.project))


async def record(app: App, p: SessionParams) -> ParallelRecord:
    """Handler of ``parallel/record``."""
    return app.parallel.record(p.session)


async def patch(app: App, p: SessionParams) -> ParallelPatch:
    """Handler of ``parallel/patch`` (a host's tree: its mirror synced first)."""
    await app.parallel.refresh(p.session)
    return await run_blocking(app.parallel.patch, p.session)  # type: ignore[no-any-return]


async def land(app: App, p: LandParams) -> Landed:
    """Handler of ``parallel/land``."""
    return await app.parallel.land(p.session, p.path, p.hunk, p.hunk_header, p.paths)


async def remove(app: App, p: RemoveParams) -> ParallelRecord:
    """Handler of ``parallel/remove``."""
    return await app.parallel.discard(p.session, p.force)


async def run_test(app: App, p: ParallelTestParams) -> ParallelTestResult:
    """Handler of ``parallel/test``."""
    return await app.parallel.test(p.session, p.command, p.timeout)


async def best_of(app: App, p: BestOfParams) -> BestOf:
    """Handler of ``parallel/best-of``: N parallel sessions made, TEXT sent to each.

    The sessions are made one after the other (each a ``git worktree add`` on
    the same repository); each one's turn starts as soon as it exists, so the
    turns run at once. One that cannot be made or sent ends the request with
    its error, the runs started so far kept in the group.
    """
    group = app.parallel.start_group(p.project, p.text, p.test_command, p.test_timeout)
    prefix = p.name or group.group
    for i, spec in enumerate(p.runs, start=1):
        name = f"{prefix}-{i}"
        made: Created = await run_blocking(lambda n=name: app.parallel.create(
            p.project, n, p.parent_session, False, p.directory))
        record = made.record
        accepted = await send_chat(app.turns, app.compactions, record.session, p.text,
                                   spec.provider, spec.model, spec.permission_mode)
        app.parallel.add_run(group, BestOfRun(
            session=record.session, name=name, worktree=record.worktree, path=made.path,
            provider=spec.provider or "",
            model=spec.model or "", permission_mode=spec.permission_mode,
            turn=accepted.turn))
    return group


async def compare(app: App, p: GroupParams) -> BestOf:
    """Handler of ``parallel/compare``."""
    return await run_blocking(app.parallel.compare, p.group)  # type: ignore[no-any-return]


METHODS: list[MethodSpec] = [
    MethodSpec("parallel/create", CreateParams, create,
               "Start a parallel session in its own git worktree (or a copy), here or on "
               "the project session's agent-server host.", Created),
    MethodSpec("parallel/list", ListParams, list_, "Every parallel session's record.", Records),
    MethodSpec("parallel/record", SessionParams, record,
               "One parallel session's record.", ParallelRecord),
    MethodSpec("parallel/patch", SessionParams, patch,
               "A parallel session's whole change against its base.", ParallelPatch),
    MethodSpec("parallel/land", LandParams, land,
               "Land parts of a parallel session's change as one turn of the project's "
               "session.", Landed),
    MethodSpec("parallel/remove", RemoveParams, remove,
               "Remove a parallel session's worktree and tandem/ branch (or copy).",
               ParallelRecord),
    MethodSpec("parallel/test", ParallelTestParams, run_test,
               "Run the user's test command in a parallel session's tree (timeout, "
               "bounded output).", ParallelTestResult),
    MethodSpec("parallel/best-of", BestOfParams, best_of,
               "Send one request to N new parallel sessions at once (a best-of-N group).",
               BestOf),
    MethodSpec("parallel/compare", GroupParams, compare,
               "A best-of-N group's results: patch stats, answers, test outcomes.", BestOf),
]
