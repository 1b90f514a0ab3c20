"""The turn service: the engine, the providers it runs and the front end's configuration.

Configuration that Emacs pushes (ACP agents from `tandem-acp-agents`, keys
from auth-source) lives only in memory here: it is never written to a journal,
a log or an event. Session facts (journal, root, entries, settings) are the
sessions side's (`tandem.sessions.service`); this service asks there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tandem.checkpoints.hooks import AfterTurn, Checkpoints
from tandem.checkpoints.maintenance import Retention
from tandem.checkpoints.service import CheckpointService
from tandem.config.front_end import ClientConfig
from tandem.config.model import SettingsModel
from tandem.editor import EditorBridge
from tandem.events import EventSink
from tandem.lru import LRU
from tandem.mcp.instruments import EditorChannels
from tandem.mcp.service import McpService
from tandem.protocol.checkpoints import Checkpoint, PatchSummary
from tandem.providers.base import Provider, TurnResult
from tandem.providers.registry import (
    AgentContext,
    build_provider,
    keeps_conversation,
    parse_provider,
)
from tandem.sessions.gate import SessionGate
from tandem.sessions.service import SessionService
from tandem.store import layout
from tandem.store.entry_view import JournalEntry
from tandem.store.images import ImageStore
from tandem.store.journal import Journal
from tandem.tools.permissions import SessionGrants
from tandem.turns.engine import TurnEnded, TurnEngine, TurnSpec, last_acp_session, run_blocking
from tandem.turns.facts import ServiceFacts

if TYPE_CHECKING:
    from tandem.checkpoints.checkpointer import Checkpointer
    from tandem.protocol.remote import RemoteTarget

def acp_choices(entries: Iterable[JournalEntry], agent: str) -> dict[str, str]:
    """The mode and model last chosen for AGENT in a session's ENTRIES (``acp_option``)."""
    chosen: dict[str, str] = {}
    for e in entries:
        if e["type"] == "acp_option" and e["agent"] == agent:
            chosen[e["option"]] = e["value"]
    return chosen


class GitCheckpoints(Checkpoints):
    """Pre-turn and post-turn checkpoints through the backend's `CheckpointService`.

    After each turn the root's store is maintained in the background
    (`tandem.checkpoints.maintenance`) with RETENTION_OF(root).
    """

    def __init__(self, service: CheckpointService,
                 retention_of: Callable[[Path], Retention] | None = None) -> None:
        self.service = service
        self.home = service.home
        self.retention_of = retention_of or (lambda _root: retention_from(None))
        self._background: set[asyncio.Task[None]] = set()
        self._taken: LRU[str, Checkpoint] = LRU(64)
        """Pre-turn checkpoints by id until their turn's `after` (not read back from git)."""

    async def before(self, root: Path, session: str, turn: int) -> str | None:
        """Snapshot ROOT before the turn."""
        cp = self.service.for_root(root)
        snap = await run_blocking(
            lambda: cp.snapshot(f"before turn {turn} of {session}", owner=session, turn=turn))
        self._taken[snap.id] = snap
        return str(snap.id)

    async def after(self, root: Path, checkpoint: str | None, result: TurnResult) -> AfterTurn:
        """Snapshot ROOT after the turn and return the patch between the two."""
        if checkpoint is None:
            return AfterTurn()
        cp = self.service.for_root(root)
        taken = self._taken.pop(checkpoint, None)
        start = taken if taken is not None else await run_blocking(cp.get, checkpoint)
        end = await run_blocking(
            lambda: cp.snapshot("after a turn", owner=start.owner, turn=start.turn))
        patch = await run_blocking(
            lambda: cp.diff(start, end, ran_shell=result.ran_shell,
                            wrote_outside=result.wrote_outside))
        task = asyncio.get_running_loop().create_task(self._maintain(cp, root))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return AfterTurn(PatchSummary.of(patch))

    async def background_done(self) -> None:
        """Wait for the store maintenance started after earlier turns."""
        while self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    async def _maintain(self, cp: Checkpointer, root: Path) -> None:
        """Pack and prune ROOT's store, off the turn's path; a failure is only logged."""
        try:
            retention = self.retention_of(root)
            await run_blocking(lambda: cp.maintain(retention, lambda: live_sessions(self.home)))
        except Exception as e:  # maintenance must never fail a turn
            logging.getLogger("tandem.checkpoints").warning("store maintenance failed: %s", e)


def live_sessions(home: Path) -> set[str]:
    """The id of every session whose journal exists under HOME."""
    ids = set()
    for folder in layout.slug_dirs(home):
        for path in layout.iter_journals(folder):
            parsed = layout.parse_journal_name(path.name)
            if parsed:
                ids.add(parsed[1])
    return ids


def retention_from(settings: SettingsModel | None) -> Retention:
    """The checkpoint retention SETTINGS ask for (``checkpoints.keep_*``)."""
    section = settings.checkpoints if settings is not None else None
    if section is None:
        return Retention()
    return Retention(keep_turns=section.keep_turns, keep_days=section.keep_days)


PER_TURN_CHOICES = frozenset({"permission_mode", "default_provider"})
"""Front-end keys each turn reads afresh: changing one rebuilds no provider."""


def _built_from(config: ClientConfig) -> dict[str, Any]:
    """The part of CONFIG providers are built from (agents, credentials, settings, hosts)."""
    built = config.model_dump(exclude=set(PER_TURN_CHOICES))
    built["settings"] = {k: v for k, v in built["settings"].items() if k not in PER_TURN_CHOICES}
    return built


class TurnService:
    """The backend's turn engine plus provider instances and front-end config."""

    def __init__(self, events: EventSink, sessions: SessionService, gate: SessionGate,
                 checkpoints: Checkpoints, editor: EditorBridge | None = None,
                 mcp: McpService | None = None,
                 remote_target: Callable[[str], RemoteTarget | None] | None = None,
                 after_end: Iterable[Callable[[TurnEnded], None]] = (),
                 directive_text: Callable[[Path, str], str] | None = None) -> None:
        self.events = events
        self.mcp = mcp if mcp is not None else McpService()
        """The sessions' MCP servers (started lazily, stopped with the session)."""
        self.editor = editor
        """The connected Emacs's buffers for ACP file requests and the editor tools
        (None: disk only, and the editor tools need Emacs)."""
        self.editor_channels = EditorChannels(editor)
        """The backchannels of tandem's editor MCP server for local ACP agents."""
        self.sessions = sessions
        self.gate = gate
        self._front_end = sessions.front_end
        """The configuration shared with the sessions side (its settings layer)."""
        self._providers: dict[tuple[str, str], Provider] = {}
        self.remote_target: Callable[[str], RemoteTarget | None] = (
            remote_target or (lambda _session: None))
        """A session's remote target (the app's `RemoteService.target`; none: all local)."""
        self._grants = SessionGrants()
        self.directive_text = directive_text
        """A directive's text by project root and id, for ``@D3`` mentions (the app's:
        directives sit above the engine); None: directives cannot be mentioned."""
        self.engine = TurnEngine(events, sessions.journal, self.provider, checkpoints,
                                 facts=ServiceFacts(sessions), gate=gate, after_end=after_end,
                                 images=ImageStore(sessions.home))

    @property
    def config(self) -> ClientConfig:
        """What the front end configured (credentials, ACP agents, defaults)."""
        return self._front_end.config

    def configure(self, config: ClientConfig) -> bool:
        """Take the front end's CONFIG; True when it changed.

        Providers are rebuilt only when what they are built from changed: a new
        permission mode or default provider applies from the next turn on to the
        running agent (``session/set_mode``), which keeps its conversation.
        """
        if config == self._front_end.config:
            return False
        rebuild = _built_from(config) != _built_from(self._front_end.config)
        self._front_end.replace(config)
        if rebuild:
            self.forget_providers()
        return True

    def provider(self, spec: TurnSpec, journal: Journal) -> Provider:
        """The provider instance for SPEC in JOURNAL's session (one per session and name)."""
        target = self.remote_target(spec.session)
        # Attaching or detaching switches the engine: the key says which one.
        key = (spec.session, spec.provider if target is None
               else f"{spec.provider}@{target.url}{target.resolved_working_dir}")
        if key not in self._providers and target is not None:
            self._providers[key] = self._remote_provider(spec, journal, target)
        if key not in self._providers:
            resolved = self.sessions.resolved(self.sessions.root_of(journal))
            conversation = (last_acp_session(self.sessions.entries(journal))[0]
                            if keeps_conversation(spec.provider) else None)
            # Agent processes read buffers through the editor, resume the mode and model
            # last chosen and get the session's MCP servers; native loops get the MCP
            # tools. The registry hands each provider only what it uses.

            def settings_now() -> Any:  # MCP servers as the settings say at each turn
                return self.sessions.resolved(self.sessions.root_of(journal)).settings

            agent = AgentContext(
                editor=self.editor,
                choices=acp_choices(self.sessions.entries(journal),
                                    parse_provider(spec.provider).target),
                mcp_servers=self.mcp.acp_source(spec.session, settings_now),
                editor_tools=lambda root: self.editor_channels.entries(spec.session, root),
                # Asked at each ACP session: a grant given or revoked meanwhile counts.
                project_trusted=lambda root: self.sessions.resolved(root).trusted,
                tool_source=self.mcp.tool_source(settings_now))
            self._providers[key] = build_provider(
                spec.provider, resolved.settings, credentials=self.config.credentials,
                grants=self._grants, origin=resolved.origin, conversation_id=conversation,
                agent=agent)
        return self._providers[key]

    def _remote_provider(self, spec: TurnSpec, journal: Journal,
                         target: RemoteTarget) -> Provider:
        """The remote engine for SPEC on TARGET; refuses when no key may go and no profile."""
        from tandem.remote.agent_llm import choose_agent, host_entry
        from tandem.remote.engine import RemoteProvider  # websockets: with the first remote turn

        resolved = self.sessions.resolved(self.sessions.root_of(journal))

        def settings_url(family: str) -> str | None:
            section = getattr(resolved.settings, family, None)
            return getattr(section, "base_url", None)

        agent = choose_agent(spec.provider, target, self.config.remote_hosts,
                             self.config.credentials, settings_url, resolved.origin)
        entry = host_entry(target, self.config.remote_hosts)
        return RemoteProvider(spec.provider, target, agent,
                              entry.api_key if entry is not None else None,
                              grants=self._grants,
                              conversation_id=last_acp_session(
                                  self.sessions.entries(journal))[0])

    def forget_providers(self) -> None:
        """Build providers afresh next time (the configuration changed).

        Idle instances are dropped; running ones finish with what they have.
        """
        busy = set(self.engine.running)
        for key in [k for k in self._providers if k[0] not in busy]:
            provider = self._providers.pop(key)
            asyncio.get_running_loop().create_task(provider.close())

    async def close(self, session: str) -> None:
        """Close SESSION: stop its providers, release its journal; refused while it is held."""
        self.gate.check_free(session, "close")
        await self.close_session(session)
        self.sessions.close(session)

    async def close_session(self, session: str) -> None:
        """Stop SESSION's providers (ACP agent processes) and its MCP servers."""
        for key in [k for k in self._providers if k[0] == session]:
            await self._providers.pop(key).close()
        await self.mcp.close_session(session)
        await self.editor_channels.close_session(session)

    async def aclose(self) -> None:
        """Cancel running turns, then stop every provider."""
        await self.engine.aclose()
        for provider in list(self._providers.values()):
            try:
                await provider.close()
            except Exception:  # closing is best effort at shutdown
                pass
        self._providers.clear()
        await self.mcp.aclose()
        await self.editor_channels.aclose()
