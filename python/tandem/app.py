"""The composition root: one `App` per backend builds and owns every service.

Each service takes its collaborators in its constructor; `App` wires them
in dependency order (gate and checkpoints, sessions, turns, then what sits
above the engine: workspaces, compactions, rewinds) and closes them in the
reverse order (`aclose`). Method handlers receive the `App` and call the
service they need; domain code never sees the `App`.

The services above the engine are built, and their modules imported, on
first use: ``tandem ask`` runs one chat turn and needs
none of them (start-up), and a backend builds each once. So is the
remote side (`remote`, `remote_checkpoints`): a turn of a session without a
target file never imports `tandem.remote`'s client, mirror or models.
"""

from __future__ import annotations

import logging
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from tandem.checkpoints.carry import carry
from tandem.checkpoints.service import CheckpointService
from tandem.config.front_end import FrontEnd
from tandem.editor import EditorBridge
from tandem.events import EventSink, NullSink
from tandem.once import Once
from tandem.paths import tandem_home
from tandem.protocol.base import TandemError
from tandem.remote.by_session import CheckpointsBySession
from tandem.remote.target_file import has_target
from tandem.sessions.gate import SessionGate
from tandem.sessions.service import SessionService
from tandem.store.journal import Journal
from tandem.store.layout import rewind_intent_path
from tandem.turns import queue
from tandem.turns.engine import TurnEnded
from tandem.turns.service import GitCheckpoints, TurnService, retention_from

if TYPE_CHECKING:
    from pydantic import SecretStr

    from tandem.directives.service import WorkspaceService
    from tandem.history.compaction import CompactionService
    from tandem.history.queue import QueueService
    from tandem.overview.facts import FactsCache
    from tandem.parallel.service import ParallelService
    from tandem.protocol.remote import RemoteTarget
    from tandem.remote.checkpoints import RemoteCheckpoints
    from tandem.remote.service import RemoteService
    from tandem.review.revert import Reverter
    from tandem.rewind.service import RewindService


log = logging.getLogger(__name__)


class App:
    """Process-wide state of one backend: its services, typed."""

    def __init__(self, home: Path | str | None = None, events: EventSink | None = None,
                 editor: EditorBridge | None = None) -> None:
        self.home = Path(home) if home is not None else tandem_home()
        """The state root (``TANDEM_HOME``)."""
        self.events: EventSink = events if events is not None else NullSink()
        """Where domain code publishes events for Emacs."""
        self.gate = SessionGate()
        """Who holds each session (a turn, a rewind, a compaction)."""
        self.checkpoints = CheckpointService(self.home)
        # Crash recovery: a session opened here settles a rewind a crash interrupted.
        # A moved session's checkpoints follow it to the new root's store.
        self.sessions = SessionService(self.home, front_end=FrontEnd(),
                                       on_open=[self._recover_on_open],
                                       on_relocated=self._carry_checkpoints)
        # After each turn the store is packed and pruned with the root's retention.
        local = GitCheckpoints(
            self.checkpoints, lambda root: retention_from(self.sessions.resolved(root).settings))
        self._remote_checkpoints = Once(self._build_remote_checkpoints)
        checkpoints = CheckpointsBySession(local, self._remote_checkpoints,
                                           lambda session: has_target(self.home, session))
        # An attached session runs remotely; a turn that ends sends the session's queue
        # on, or holds it.
        self.turns = TurnService(self.events, self.sessions, self.gate, checkpoints, editor,
                                 remote_target=self._remote_target, after_end=[self._after_turn],
                                 directive_text=self._directive_text)

    def _directive_text(self, root: Path, directive: str) -> str:
        # An @D3 mention reads the directive from its workspace (built on first use).
        return self.workspaces.mention_text(root, directive)

    def _after_turn(self, ended: TurnEnded) -> None:
        # Only a session with queued messages (or steers its turn did not take)
        # needs the queue's driver.
        if ended.steers_left or queue.fold(
                self.sessions.entries(self.sessions.journal(ended.session))).items:
            self.queue.on_turn_ended(ended)

    def _carry_checkpoints(self, session_id: str, old_root: Path, new_root: Path) -> None:
        """Carry SESSION_ID's checkpoints from OLD_ROOT's store to NEW_ROOT's."""
        carry(self.home, old_root, new_root, session_id)

    def _recover_on_open(self, journal: Journal) -> None:
        # Only a session a crash left mid-rewind needs the rewind service.
        if rewind_intent_path(journal.path).exists():
            self.rewinds.recover_on_open(journal)
        # Any other restore a crash cut (a revert, an undo) is rolled back now,
        # not at the next checkpoint: its temporary files go with it.
        try:
            self.checkpoints.settle_interrupted(journal.header.cwd)
        except (TandemError, OSError) as e:
            log.error("settling an interrupted restore in %s failed: %s", journal.header.cwd,
                      e.message if isinstance(e, TandemError) else e)

    def _rewind_settled(self, session: str) -> bool:
        """True when SESSION has no rewind intent left; opening its journal settles one."""
        journal = self.sessions.journal(session)
        return not rewind_intent_path(journal.path).exists()

    @cached_property
    def remote(self) -> RemoteService:
        """Remote agent-server targets (every turn asks whether its session has one)."""
        from tandem.remote.service import RemoteService

        # Checkpoints and Rewind of a remote session reach its server with the key of
        # the user's host entry (Emacs pushes it), as its turns do.
        return RemoteService(self.home, key_lookup=self._remote_key)

    @property
    def remote_checkpoints(self) -> RemoteCheckpoints:
        """Checkpoints and mirrors of remote workspaces (`tandem.remote.checkpoints`)."""
        return self._remote_checkpoints.get()

    def _build_remote_checkpoints(self) -> RemoteCheckpoints:
        from tandem.remote.checkpoints import RemoteCheckpoints

        # A session with a remote target checkpoints its mirror (default retention: a
        # mirror's settings files come from the server, not from the user).
        return RemoteCheckpoints(GitCheckpoints(self.checkpoints), self.remote, self.home,
                                 self.checkpoints, settled=self._rewind_settled)

    def _remote_target(self, session: str) -> RemoteTarget | None:
        """SESSION's remote target; no remote code loads for a session without its file."""
        return self.remote.target(session) if has_target(self.home, session) else None

    @cached_property
    def workspaces(self) -> WorkspaceService:
        """Workspaces and their directives."""
        from tandem.directives.service import WorkspaceService

        return WorkspaceService(self.home, self.sessions, self.turns, self.checkpoints)

    @cached_property
    def compactions(self) -> CompactionService:
        """Compaction of sessions (automatic before a send, or asked for)."""
        from tandem.history.compaction import CompactionService

        return CompactionService(self.events, self.sessions, self.turns, self.gate)

    @cached_property
    def queue(self) -> QueueService:
        """Each session's queue of messages sent while a turn ran (the backend sends it on)."""
        from tandem.history.queue import QueueService

        return QueueService(self.events, self.turns, lambda: self.compactions)

    @cached_property
    def rewinds(self) -> RewindService:
        """Rewind, its undo and their crash recovery."""
        from tandem.rewind.service import RewindService

        return RewindService(self.events, self.sessions, self.turns, self.checkpoints,
                             self.gate, self.remote_checkpoints)

    @cached_property
    def review(self) -> Reverter:
        """Reverts of a turn's hunks and files (the review buffer's k and K)."""
        from tandem.review.revert import Reverter

        return Reverter(self.events, self.sessions, self.gate, self.checkpoints, self.rewinds,
                        self.remote_checkpoints)

    @cached_property
    def overview_facts(self) -> FactsCache:
        """Turn and token counts per journal for the sessions overview."""
        from tandem.overview.facts import FactsCache

        return FactsCache()

    @cached_property
    def parallel(self) -> ParallelService:
        """Parallel sessions in their own trees, and their landings."""
        from tandem.parallel.service import ParallelService

        # A session on an agent-server host gets its parallel sessions there.
        return ParallelService(self.home, self.sessions, self.turns.engine, self.checkpoints,
                               self.gate, remote=lambda: self.remote_checkpoints)

    def _remote_key(self, target: RemoteTarget) -> SecretStr | None:
        """The session API key of the user's entry for TARGET's host, if any."""
        from tandem.remote.agent_llm import host_entry

        entry = host_entry(target, self.turns.config.remote_hosts)
        return entry.api_key if entry is not None else None

    async def aclose(self) -> None:
        """Stop in reverse order: running turns end through their terminal path and the
        providers stop, then the sessions' journals are released."""
        if "queue" in self.__dict__:  # sends a turn's end started go first, then are cancelled
            await self.queue.background_done()
        await self.turns.aclose()
        self.sessions.close()
