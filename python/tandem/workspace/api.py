"""Directive methods for Emacs: create, list, get, preview, act, edit, anchor, archive, rebind…

Every method names the workspace by its project ``root`` (the backend maps
it to the workspace id through its registry) and a directive by its short
id (``D7``). Records come back as plain dicts: Emacs sees plists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from tandem.protocol.base import MethodSpec, Params, TandemError
from tandem.workspace.actions import available
from tandem.workspace.flow import act, prepare
from tandem.workspace.models import MAX_TEXT, Anchor, DirectiveState, Reference, SystemDirective
from tandem.workspace.references import relative_path
from tandem.workspace.service import Workspace

if TYPE_CHECKING:
    from tandem.app import App

ActionName = Literal["discuss", "implement", "implement-this", "discuss-result",
                     "request-changes", "retry"]


def record(ws: Workspace, state: DirectiveState, diffs: bool = False) -> dict[str, Any]:
    """The directive record as the front end sees it (diffs only when asked)."""
    data = state.model_dump(mode="json")
    if not diffs:
        for a in data["attempts"]:
            a["diff_chars"] = len(a.pop("diff", "") or "")
    data.update(actions=available(state), workspace=ws.id, root=str(ws.root))
    return data


def summary(state: DirectiveState) -> dict[str, Any]:
    """One row of the directive list."""
    return {"id": state.id, "state": state.state, "request": state.request,
            "request_changed": state.request_changed, "path": state.anchor.path,
            "start_line": state.anchor.start_line, "end_line": state.anchor.end_line,
            "anchor_status": state.anchor.status, "anchor_text": state.anchor.text,
            "attempts": len(state.attempts), "discussion": len(state.discussion),
            "session": state.session, "archived": state.archived,
            "actions": available(state)}


class RootParams(Params):
    """A workspace, by project root."""

    root: str = Field(min_length=1)


class IdParams(RootParams):
    """One directive of a workspace."""

    id: str = Field(min_length=2, max_length=12)


class CreateParams(RootParams):
    """Create a directive on ``path`` lines ``start_line``..``end_line`` (text ``text``)."""

    path: str = Field(min_length=1)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    text: str = Field(default="", max_length=MAX_TEXT)
    request: str
    references: list[Reference] = Field(default_factory=list)


async def create(app: App, p: CreateParams) -> dict[str, Any]:
    """Create a directive; returns its record."""
    svc = app.workspaces
    ws = svc.open(p.root)
    state = svc.create(ws, p.path, p.start_line, p.end_line, p.text, p.request, p.references)
    return record(ws, state)


class ListParams(RootParams):
    """The directives of a workspace; archived ones only with ``archived``."""

    archived: bool = False


async def list_directives(app: App, p: ListParams) -> list[dict[str, Any]]:
    """Directive rows, oldest first."""
    svc = app.workspaces
    if svc.registry.lookup(p.root) is None:
        return []
    ws = svc.open(p.root)
    return [summary(s) for s in svc.states(ws).values() if p.archived or not s.archived]


class GetParams(IdParams):
    """One directive's record; ``diffs`` includes each attempt's full diff."""

    diffs: bool = False


async def get(app: App, p: GetParams) -> dict[str, Any]:
    """The record: id state request session attempts discussion anchor actions…"""
    svc = app.workspaces
    ws = svc.open(p.root, create=False)
    return record(ws, svc.get(ws, p.id), p.diffs)


class ActionParams(IdParams):
    """An action on a directive: ``text`` (question, guidance, feedback), ``attempt``."""

    action: ActionName
    text: str = Field(default="", max_length=MAX_TEXT)
    attempt: int | None = Field(default=None, ge=1)
    system_directive: SystemDirective | None = None


async def preview(app: App, p: ActionParams) -> dict[str, Any]:
    """The exact prompt the action would send now (nothing is sent or written)."""
    svc = app.workspaces
    ws = svc.open(p.root, create=False)
    prep = prepare(ws, svc.get(ws, p.id), p.action, p.text, p.attempt, p.system_directive)
    return {"prompt": prep.prompt, "system": prep.system.model_dump(),
            "attempt": prep.based_on.seq if prep.based_on else None,
            "read_only": p.action in ("discuss", "discuss-result")}


class ActParams(ActionParams):
    """Run an action: ``provider``/``model`` per request; ``session`` for the first binding."""

    provider: str | None = None
    model: str = ""
    session: str | None = None
    permission_mode: Literal["ask", "auto-edit", "read-only"] | None = None


async def act_method(app: App, p: ActParams) -> dict[str, Any]:
    """Start the action as a turn of the bound session; returns (session, turn, attempt)."""
    svc = app.workspaces
    ws = svc.open(p.root, create=False)
    return await act(svc, ws, p.id, p.action, p.text, p.attempt, p.provider, p.model,
                     p.session, p.permission_mode, p.system_directive)


class EditParams(IdParams):
    """Change the request (back to Ready) and/or the references."""

    request: str | None = None
    references: list[Reference] | None = None


async def edit(app: App, p: EditParams) -> dict[str, Any]:
    """Edit a directive; earlier activity is kept."""
    svc = app.workspaces
    ws = svc.open(p.root, create=False)
    return record(ws, svc.edit(ws, p.id, p.request, p.references))


class AnchorParams(IdParams):
    """Where the anchor is now, as Emacs sees it."""

    path: str = Field(min_length=1)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    text: str = Field(default="", max_length=MAX_TEXT)
    status: Literal["attached", "detached", "source-missing"] = "attached"


async def anchor(app: App, p: AnchorParams) -> dict[str, Any]:
    """Record the anchor's new place or status."""
    svc = app.workspaces
    ws = svc.open(p.root, create=False)
    try:
        a = Anchor(path=svc_rel(ws, p.path), start_line=p.start_line, end_line=p.end_line,
                   text=p.text, status=p.status)
    except ValueError as exc:
        raise TandemError("invalid", f"Bad anchor: {exc}") from None
    return record(ws, svc.update_anchor(ws, p.id, a))


def svc_rel(ws: Workspace, path: str) -> str:
    """PATH relative to the workspace root (a clear error outside it)."""
    try:
        return relative_path(ws.root, path)
    except ValueError as exc:
        raise TandemError("invalid", str(exc)) from None


class ReattachParams(IdParams):
    """Reattach: at ``start_line``..``end_line``, or where the anchor text occurs once."""

    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)


async def reattach(app: App, p: ReattachParams) -> dict[str, Any]:
    """Reattach a detached or source-missing directive."""
    svc = app.workspaces
    ws = svc.open(p.root, create=False)
    return record(ws, svc.reattach(ws, p.id, p.start_line, p.end_line))


class ArchiveParams(IdParams):
    """Archive (hide) or, with ``archived`` nil, unarchive."""

    archived: bool = True


async def archive(app: App, p: ArchiveParams) -> dict[str, Any]:
    """Archive or unarchive; nothing is deleted."""
    svc = app.workspaces
    ws = svc.open(p.root, create=False)
    return record(ws, svc.archive(ws, p.id, p.archived))


class RebindParams(IdParams):
    """Move future activity to ``session``; without ``confirm`` only the warning is returned."""

    session: str = Field(min_length=1)
    confirm: bool = False


async def rebind(app: App, p: RebindParams) -> dict[str, Any]:
    """Warn, then (with ``confirm``) rebind; earlier attempt links are unchanged."""
    svc = app.workspaces
    ws = svc.open(p.root, create=False)
    state = svc.get(ws, p.id)
    try:
        journal = app.sessions.journal(p.session)
    except TandemError as exc:
        raise TandemError("unavailable", f"Cannot rebind to {p.session}: {exc.message}") from None
    if state.session == journal.id:
        raise TandemError("invalid", f"{p.id} is already bound to {journal.id}")
    warning = svc.rebind_warning(state, journal.id)
    if not p.confirm:
        return {"confirmed": False, "warning": warning, "session": journal.id}
    svc.bind(ws, p.id, journal.id, rebind=True)
    return {"confirmed": True, "warning": warning, "session": journal.id,
            "record": record(ws, svc.get(ws, p.id))}


class DiffParams(IdParams):
    """One attempt's patch."""

    attempt: int = Field(ge=1)


async def attempt_diff(app: App, p: DiffParams) -> dict[str, Any]:
    """The recorded diff, patch summary and completeness of an attempt."""
    svc = app.workspaces
    ws = svc.open(p.root, create=False)
    state = svc.get(ws, p.id)
    for a in state.attempts:
        if a.seq == p.attempt:
            return {"diff": a.diff, "patch": a.patch, "completeness": a.completeness,
                    "session": a.session, "turn": a.turn, "checkpoint": a.checkpoint}
    raise TandemError("not-found", f"{p.id} has no surviving attempt {p.attempt}")


async def workspace_info(app: App, p: RootParams) -> dict[str, Any]:
    """The workspace id, root and log file of a project (registered on first use)."""
    svc = app.workspaces
    ws = svc.open(p.root)
    return {"id": ws.id, "root": str(ws.root), "log": str(ws.log.path),
            "notices": ws.log.notices}


METHODS: list[MethodSpec] = [
    MethodSpec("directives/create", CreateParams, create, "Create a directive on a region."),
    MethodSpec("directives/list", ListParams, list_directives, "List a workspace's directives."),
    MethodSpec("directives/get", GetParams, get, "A directive's record."),
    MethodSpec("directives/preview", ActionParams, preview, "The exact prompt of an action."),
    MethodSpec("directives/act", ActParams, act_method, "Run an action as a turn."),
    MethodSpec("directives/edit", EditParams, edit, "Edit request or references."),
    MethodSpec("directives/anchor", AnchorParams, anchor, "Record the anchor's place/status."),
    MethodSpec("directives/reattach", ReattachParams, reattach, "Reattach a lost anchor."),
    MethodSpec("directives/archive", ArchiveParams, archive, "Archive or unarchive."),
    MethodSpec("directives/rebind", RebindParams, rebind, "Warned rebind to another session."),
    MethodSpec("directives/diff", DiffParams, attempt_diff, "An attempt's recorded patch."),
    MethodSpec("directives/workspace", RootParams, workspace_info, "The workspace of a root."),
]
