"""What the turn and provider methods ask of the turn service.

Each function resolves the session named in a request (an id or a unique
prefix) and makes the call the engine or the provider registry answers;
the adapters stay one line each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tandem.config import strict_json
from tandem.config.agent_files import instructions_text, project_instructions
from tandem.config.front_end import ClientConfig, RemoteHost
from tandem.config.model import validate
from tandem.events import EventSink
from tandem.mentions.resolve import resolve
from tandem.protocol.base import TandemError
from tandem.protocol.events import EntryEvent
from tandem.protocol.providers import ModelsReply
from tandem.protocol.sessions import WrittenEntry
from tandem.protocol.turns import AgentSpec, Configured, RemoteHostSpec, SteerReply, TurnStatus
from tandem.providers.base import PermissionAnswer, PermissionMode, PermissionReply
from tandem.providers.credentials import ApiFamily, resolve_credentials
from tandem.providers.model_list import list_models, models_url
from tandem.providers.registry import parse_provider
from tandem.sessions.service import SessionService
from tandem.store.entry_view import JournalEntry
from tandem.store.models import entry_to_dict
from tandem.turns.engine import TurnSpec
from tandem.turns.service import TurnService
from tandem.turns.usage import ProviderChoice


def chat_spec(sessions: SessionService, session: str, text: str, provider: str | None,
              model: str | None, permission_mode: PermissionMode | None) -> TurnSpec:
    """The chat turn TEXT of SESSION as the settings and the session's choices make it.

    Its project instructions are read now; its mentions are not (`chat_request`).
    """
    journal = sessions.journal(session)
    root = sessions.root_of(journal)
    settings = sessions.settings(root)
    # The session's own choice (M-x tandem-set-provider) wins over the default.
    requested = provider or sessions.entry_cache.view(journal.path, ProviderChoice).chosen
    found = project_instructions(root, *sessions.resolved(root).settings.instruction_files())
    return TurnSpec(session=journal.id, text=text,
                    provider=sessions.provider_for(settings, requested), model=model or "",
                    permission_mode=sessions.permission_mode(settings, permission_mode),
                    instructions=instructions_text(found),
                    context=[i.record() for i in found])


async def chat_request(turns: TurnService, session: str, text: str, provider: str | None,
                       model: str | None, permission_mode: PermissionMode | None) -> TurnSpec:
    """`chat_spec` with TEXT's ``@`` mentions resolved now (a refusal sends nothing).

    A file mention reads the editor's buffer when one visits the file.
    """
    spec = chat_spec(turns.sessions, session, text, provider, model, permission_mode)
    sessions = turns.sessions
    journal = sessions.journal(spec.session)
    root = sessions.root_of(journal)
    lookup = turns.directive_text
    attached = await resolve(
        text, root, sessions.resolved(root).settings.mention_limits(),
        buffer_text=turns.editor.buffer_text if turns.editor is not None else None,
        directive_text=(lambda d: lookup(root, d)) if lookup is not None else None,
        turn_text=lambda n: turn_text(sessions.entries(journal), n))
    spec.attached = attached.text
    spec.context = [*attached.records, *spec.context]
    return spec


def turn_text(entries: Iterable[JournalEntry], turn: int) -> str | None:
    """TURN's request and answer from a session's ENTRIES (None: no such turn)."""
    request: str | None = None
    answer: list[str] = []
    for e in entries:
        if e["type"] == "user" and e["turn"] == turn:
            request = e["text"]
        elif e["type"] == "assistant" and e["turn"] == turn:
            answer.append(e["text"])
    if request is None:
        return None
    return (f"Request:\n{request.strip()}\n\nAnswer:\n"
            + ("\n\n".join(a.strip() for a in answer) or "(no answer)"))


def cancel(turns: TurnService, session: str) -> bool:
    """Cancel SESSION's turn in flight; it ends aborted through the terminal path."""
    return turns.engine.cancel(turns.sessions.journal(session).id)


def steer(turns: TurnService, session: str, text: str) -> SteerReply:
    """Give TEXT to SESSION's running turn (refused, with why, when it cannot take it)."""
    sid = turns.sessions.journal(session).id
    turn, waiting = turns.engine.steer(sid, text)
    return SteerReply(session=sid, turn=turn, waiting=waiting)


def answer(turns: TurnService, session: str, interaction_id: str, choice: PermissionAnswer,
           content: str | None = None, reason: str | None = None) -> None:
    """Answer a permission question of SESSION's running turn (not-found: none waits).

    CONTENT is the user's edited change, REASON a rejection's reason for the model.
    """
    reply = PermissionReply(answer=choice, content=content, reason=reason)
    if not turns.engine.answer(turns.sessions.journal(session).id, interaction_id, reply):
        raise TandemError("not-found", f"No pending question {interaction_id} in {session}")


def status(turns: TurnService, session: str, turn: int) -> TurnStatus:
    """Where TURN of SESSION stands."""
    return turns.engine.status(turns.sessions.journal(session).id, turn)


async def wait(turns: TurnService, session: str, turn: int, timeout: float) -> TurnStatus:
    """Wait up to TIMEOUT seconds (0: not at all) for TURN to end; its status either way."""
    engine = turns.engine
    sid = turns.sessions.journal(session).id
    if timeout:
        try:
            await asyncio.wait_for(engine.wait(sid, turn), timeout=timeout)
        except TimeoutError:
            pass
    return engine.status(sid, turn)


def configure(turns: TurnService, acp_agents: list[AgentSpec],
              credentials: dict[str, dict[str, str]], default_provider: str | None,
              permission_mode: PermissionMode | None,
              settings_json: str | None,
              remote_hosts: list[RemoteHostSpec] | None = None) -> Configured:
    """Take the front end's configuration (in memory only); the agents and keys it named."""
    agents = {a.name: {"command": a.command, "env": dict(a.env),
                       "project_config_files": a.project_config_files} for a in acp_agents}
    custom: dict[str, Any] = {}
    if settings_json:
        data = strict_json.loads(settings_json, "from Emacs customization")
        custom = validate(data, "from Emacs customization").plain()
    hosts = {h.name: RemoteHost(url=h.url, forward_keys=h.forward_keys,
                                agent_profile=h.agent_profile, api_key=h.api_key)
             for h in remote_hosts or []}
    # Emacs sends this before every turn; providers are rebuilt only on a change.
    turns.configure(ClientConfig(acp_agents=agents, credentials=credentials,
                                 remote_hosts=hosts, default_provider=default_provider,
                                 permission_mode=permission_mode, settings=custom))
    return Configured(acp_agents=sorted(agents), credentials=sorted(credentials),
                      remote_hosts=sorted(hosts))


def set_provider(sessions: SessionService, events: EventSink, session: str,
                 provider: str) -> WrittenEntry:
    """Record PROVIDER as SESSION's choice for its next turns; the entry written."""
    spec = parse_provider(provider)  # a clear error for a malformed name
    journal = sessions.journal(session)
    entry = journal.append({"type": "provider_change", "provider": spec.name,
                            "model": "" if spec.family == "acp" else spec.target})
    journal.sync()
    written = entry_to_dict(entry)
    events.publish(journal.id, EntryEvent(entry=written))
    return WrittenEntry(written)


async def server_models(turns: TurnService, family: ApiFamily, base_url: str | None,
                        timeout: float) -> ModelsReply:
    """The models FAMILY's server lists, asked with the user's key (auth-source or env)."""
    given = turns.config.credentials.get(family) or {}
    creds = resolve_credentials(family, api_key=given.get("api_key"),
                                base_url=base_url or given.get("base_url"))
    return ModelsReply(url=models_url(creds), models=await list_models(creds, timeout))


def default_provider(sessions: SessionService, cwd: str) -> str | None:
    """The provider a turn in CWD uses by default (settings, Emacs), or None: first run."""
    try:
        return sessions.provider_for(sessions.settings(Path(cwd)), None)
    except TandemError as e:
        if e.code != "no-provider":
            raise
        return None
