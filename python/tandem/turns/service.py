"""Wiring of the turn engine into a backend: journals, providers, checkpoints, config.

Configuration that Emacs pushes (ACP agents from `tandem-acp-agents`, keys
from auth-source) lives only in memory here: it is never written to a journal,
a log or an event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from tandem.checkpoints.maintenance import Retention
from tandem.config.layers import Resolved, resolve
from tandem.config.model import SettingsModel
from tandem.paths import tandem_home
from tandem.protocol.base import TandemError
from tandem.providers.base import PermissionMode, Provider, TurnResult
from tandem.providers.registry import build_provider, parse_provider
from tandem.store import layout
from tandem.store.entry_cache import EntryCache
from tandem.store.journal import Journal
from tandem.tools.permissions import SessionGrants
from tandem.turns.engine import Checkpoints, TurnEngine, TurnSpec, last_acp_session, run_blocking

if TYPE_CHECKING:
    from tandem.checkpoints.checkpointer import Checkpointer

PERMISSION_MODES: tuple[PermissionMode, ...] = ("ask", "auto-edit", "read-only")


class ClientConfig(BaseModel):
    """What a front end configures for this backend (in memory only)."""

    acp_agents: dict[str, dict[str, Any]] = Field(default_factory=dict)
    credentials: dict[str, dict[str, str]] = Field(default_factory=dict)
    default_provider: str | None = None
    permission_mode: PermissionMode | None = None


def resolve_for(root: Path, config: ClientConfig | None = None,
                home: Path | None = None) -> Resolved:
    """ROOT's settings: user, project (filtered by trust in HOME), the front end's on top."""
    overlay: dict[str, Any] = {}
    if config is not None:
        if config.acp_agents:
            overlay["acp_agents"] = config.acp_agents
        if config.default_provider:
            overlay["default_provider"] = config.default_provider
    return resolve(root, home or tandem_home(), overlay=overlay)


def settings_for(root: Path, config: ClientConfig | None = None,
                 home: Path | None = None) -> dict[str, Any]:
    """The effective settings of ROOT as plain data (see `resolve_for`)."""
    return resolve_for(root, config, home).plain()


def choose_provider(settings: dict[str, Any], requested: str | None) -> str:
    """The provider name a request uses: REQUESTED, else the settings' default."""
    name = requested or settings.get("default_provider")
    if not name:
        raise TandemError("no-provider", "No provider chosen: pass one (e.g. openai:gpt-4o, "
                          "anthropic:claude-sonnet-4-5, acp:claude) or set default_provider "
                          "in ~/.config/tandem/settings.json")
    parse_provider(str(name))  # a clear error for a malformed name
    return str(name)


def choose_permission_mode(settings: dict[str, Any], requested: str | None,
                           config: ClientConfig | None = None) -> PermissionMode:
    """The permission mode: the request's, else the front end's, else settings, else ask."""
    mode = requested or (config.permission_mode if config else None) or settings.get(
        "permission_mode") or "ask"
    if mode not in PERMISSION_MODES:
        raise TandemError("invalid", f"permission mode {mode!r}: use ask, auto-edit or read-only")
    return mode  # type: ignore[return-value]


class GitCheckpoints(Checkpoints):
    """Pre-turn and post-turn checkpoints through `tandem.checkpoints`.

    After each turn the root's store is maintained in the background
    (`tandem.checkpoints.maintenance`) with RETENTION_OF(root).
    """

    def __init__(self, home: Path,
                 retention_of: Callable[[Path], Retention] | None = None) -> None:
        from tandem.checkpoints.service import CheckpointService

        self.service = CheckpointService(home)
        self.home = home
        self.retention_of = retention_of or (lambda _root: retention_from(None))
        self._background: set[asyncio.Task[None]] = set()

    async def before(self, root: Path, session: str, turn: int) -> str | None:
        """Snapshot ROOT before the turn."""
        cp = self.service.for_root(root)
        snap = await run_blocking(
            lambda: cp.snapshot(f"before turn {turn} of {session}", owner=session, turn=turn))
        return str(snap.id)

    async def after(self, root: Path, checkpoint: str | None, result: TurnResult
                    ) -> tuple[dict[str, Any] | None, str | None]:
        """Snapshot ROOT after the turn and return the patch between the two."""
        if checkpoint is None:
            return None, None
        cp = self.service.for_root(root)
        start = await run_blocking(cp.get, checkpoint)
        end = await run_blocking(
            lambda: cp.snapshot("after a turn", owner=start.owner, turn=start.turn))
        patch = await run_blocking(
            lambda: cp.diff(checkpoint, end.id, ran_shell=result.ran_shell,
                            wrote_outside=result.wrote_outside))
        summary = patch.model_dump(mode="json", exclude={"diff"})
        summary["diff_chars"] = len(patch.diff)
        task = asyncio.get_running_loop().create_task(self._maintain(cp, root))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return summary, str(patch.completeness)

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


class TurnService:
    """The backend's turn engine plus provider instances and front-end config."""

    def __init__(self, app: Any, checkpoints: Checkpoints | None = None) -> None:
        from tandem.sessions.api import manager

        self.app = app
        self.config = ClientConfig()
        self._manager = manager(app)
        self._providers: dict[tuple[str, str], Provider] = {}
        self._grants = SessionGrants()
        self.entry_cache = EntryCache()
        """Parsed journals, shared by turns, compaction and rewind."""
        self.engine = TurnEngine(app.events, self.journal, self.provider,
                                 checkpoints if checkpoints is not None
                                 else GitCheckpoints(
                                     Path(app.home),
                                     lambda root: retention_from(self.resolved(root).settings)),
                                 root_of=self.root_of, entries_of=self.entries)

    def entries(self, journal: Journal) -> list[dict[str, Any]]:
        """JOURNAL's entries as dicts, parsing only what was appended since last time.

        Shared with compaction's check, so a long session is parsed once.
        """
        return self.entry_cache.entries(journal.path)

    def resolved(self, root: Path) -> Resolved:
        """ROOT's settings under this backend's trust store and front-end config."""
        return resolve_for(root, self.config, Path(self.app.home))

    def settings(self, root: Path) -> dict[str, Any]:
        """ROOT's effective settings as plain data."""
        return self.resolved(root).plain()

    def root_of(self, journal: Journal) -> Path:
        """Where SESSION's tools work: the active directory when it is the current session."""
        current = self._manager.current
        if current is not None and current.journal.id == journal.id:
            return Path(current.active_cwd)
        return Path(journal.header.cwd)

    def journal(self, session: str) -> Journal:
        """The open journal of SESSION (opened on demand, kept open)."""
        journal = self._manager.journal(session)
        self._manager.journals.setdefault(journal.id, journal)
        return journal

    def provider(self, spec: TurnSpec, journal: Journal) -> Provider:
        """The provider instance for SPEC in JOURNAL's session (one per session and name)."""
        key = (spec.session, spec.provider)
        if key not in self._providers:
            resolved = self.resolved(self.root_of(journal))
            acp_kwargs: dict[str, Any] = {}
            if spec.provider.startswith("acp:"):
                acp_kwargs["root_session_id"] = last_acp_session(self.entries(journal))[0]
            self._providers[key] = build_provider(
                spec.provider, resolved.settings, credentials=self.config.credentials,
                grants=self._grants, origin=resolved.origin, **acp_kwargs)
        return self._providers[key]

    def forget_providers(self) -> None:
        """Build providers afresh next time (the configuration changed).

        Idle instances are dropped; running ones finish with what they have.
        """
        busy = set(self.engine.running)
        for key in [k for k in self._providers if k[0] not in busy]:
            provider = self._providers.pop(key)
            asyncio.get_running_loop().create_task(provider.close())

    async def close_session(self, session: str) -> None:
        """Stop SESSION's providers (ACP agent processes)."""
        for key in [k for k in self._providers if k[0] == session]:
            await self._providers.pop(key).close()

    async def aclose(self) -> None:
        """Cancel running turns, then stop every provider."""
        await self.engine.aclose()
        for provider in list(self._providers.values()):
            try:
                await provider.close()
            except Exception:  # closing is best effort at shutdown
                pass
        self._providers.clear()


def turns(app: Any) -> TurnService:
    """The `TurnService` of APP."""
    service: TurnService = app.service("turns", TurnService)
    return service
