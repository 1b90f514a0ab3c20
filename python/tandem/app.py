"""The composition root: one `App` per backend builds and owns every service.

Each service takes its collaborators in its constructor; `App` wires them
in dependency order (gate and checkpoints, sessions, turns, then what sits
above the engine: workspaces, compactions, rewinds) and closes them in the
reverse order (`aclose`). Method handlers receive the `App` and call the
service they need; domain code never sees the `App`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from tandem.checkpoints.service import CheckpointService
from tandem.editor import EditorBridge
from tandem.events import EventSink, NullSink
from tandem.history.compaction import CompactionService
from tandem.history.rewind import RewindService
from tandem.overview.facts import FactsCache
from tandem.paths import tandem_home
from tandem.remote.agent_llm import host_entry
from tandem.remote.checkpoints import CheckpointsBySession, RemoteCheckpoints
from tandem.remote.models import RemoteTarget
from tandem.remote.service import RemoteService
from tandem.sessions.gate import SessionGate
from tandem.sessions.service import SessionService
from tandem.turns.service import GitCheckpoints, TurnService, retention_from
from tandem.workspace.service import WorkspaceService


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
        self.sessions = SessionService(self.home)
        self.remote = RemoteService(self.home)
        # After each turn the store is packed and pruned with the root's retention.
        local = GitCheckpoints(
            self.checkpoints, lambda root: retention_from(self.sessions.resolved(root).settings))
        # A session with a remote target checkpoints its mirror (default retention: a
        # mirror's settings files come from the server, not from the user).
        self.remote_checkpoints = RemoteCheckpoints(
            GitCheckpoints(self.checkpoints), self.remote, self.home)
        """Checkpoints and mirrors of remote workspaces (`tandem.remote.checkpoints`)."""
        checkpoints = CheckpointsBySession(local, self.remote_checkpoints)
        self.turns = TurnService(self.events, self.sessions, self.gate, checkpoints, editor)
        self.workspaces = WorkspaceService(self.home, self.sessions, self.turns, self.checkpoints)
        self.compactions = CompactionService(self.events, self.sessions, self.turns, self.gate)
        self.rewinds = RewindService(self.events, self.sessions, self.turns, self.checkpoints,
                                     self.gate, self.remote_checkpoints)
        self.turns.remote_target = self.remote.target  # an attached session runs remotely
        # Checkpoints and Rewind of a remote session reach its server with the key of
        # the user's host entry (Emacs pushes it), as its turns do.
        self.remote.key_lookup = self._remote_key
        self.overview_facts = FactsCache()
        """Turn and token counts per journal for the sessions overview."""
        # Crash recovery: a session opened here settles a rewind a crash interrupted.
        self.sessions.manager.on_open.append(self.rewinds.recover_on_open)

    def _remote_key(self, target: RemoteTarget) -> SecretStr | None:
        """The session API key of the user's entry for TARGET's host, if any."""
        entry = host_entry(target, self.turns.config.remote_hosts)
        return entry.api_key if entry is not None else None

    async def aclose(self) -> None:
        """Stop in reverse order: running turns end through their terminal path and the
        providers stop, then the sessions' journals are released."""
        await self.turns.aclose()
        self.sessions.close()
