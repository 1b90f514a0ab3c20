"""Directive methods (``directives/…``): create, list, get, preview, act, edit, anchor…

Every method names the workspace by its project ``root`` and a directive by
its short id (``D7``); the work is `tandem.directives.requests`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.directives import requests
from tandem.protocol.base import MethodSpec
from tandem.protocol.directives import (
    Acted,
    ActionParams,
    ActParams,
    AnchorParams,
    ArchiveParams,
    AttemptDiff,
    CreateParams,
    DiffParams,
    DirectiveRecord,
    DirectiveRows,
    EditParams,
    GetParams,
    ListParams,
    PromptPreview,
    ReattachParams,
    RebindParams,
    RebindWarning,
    Rebound,
    RootParams,
    WorkspaceInfo,
)

if TYPE_CHECKING:
    from tandem.app import App


async def create(app: App, p: CreateParams) -> DirectiveRecord:
    """Create a directive; returns its record."""
    return DirectiveRecord(requests.create(app.workspaces, p.root, p.path, p.start_line,
                                           p.end_line, p.text, p.request, p.references))


async def list_directives(app: App, p: ListParams) -> DirectiveRows:
    """Directive rows, oldest first."""
    return DirectiveRows.model_validate(requests.rows(app.workspaces, p.root, p.archived))


async def get(app: App, p: GetParams) -> DirectiveRecord:
    """The record: id state request session attempts discussion anchor actions…"""
    return DirectiveRecord(requests.get(app.workspaces, p.root, p.id, p.diffs))


async def preview(app: App, p: ActionParams) -> PromptPreview:
    """The exact prompt the action would send now (nothing is sent or written)."""
    return PromptPreview.model_validate(requests.preview(
        app.workspaces, p.root, p.id, p.action, p.text, p.attempt, p.system_directive))


async def act(app: App, p: ActParams) -> Acted:
    """Start the action as a turn of the bound session; returns (session, turn, attempt)."""
    return Acted.model_validate(await requests.act(
        app.workspaces, p.root, p.id, p.action, p.text, p.attempt, p.provider, p.model,
        p.session, p.permission_mode, p.system_directive))


async def edit(app: App, p: EditParams) -> DirectiveRecord:
    """Edit a directive; earlier activity is kept."""
    return DirectiveRecord(requests.edit(app.workspaces, p.root, p.id, p.request, p.references))


async def anchor(app: App, p: AnchorParams) -> DirectiveRecord:
    """Record the anchor's new place or status."""
    return DirectiveRecord(requests.move_anchor(app.workspaces, p.root, p.id, p.path,
                                                p.start_line, p.end_line, p.text, p.status))


async def reattach(app: App, p: ReattachParams) -> DirectiveRecord:
    """Reattach a detached or source-missing directive."""
    return DirectiveRecord(requests.reattach(app.workspaces, p.root, p.id, p.start_line,
                                             p.end_line))


async def archive(app: App, p: ArchiveParams) -> DirectiveRecord:
    """Archive or unarchive; nothing is deleted."""
    return DirectiveRecord(requests.archive(app.workspaces, p.root, p.id, p.archived))


async def rebind(app: App, p: RebindParams) -> RebindWarning:
    """Warn, then (with ``confirm``) rebind; earlier attempt links are unchanged.

    Unconfirmed, the reply is the warning alone; confirmed, a `Rebound` with the record.
    """
    done = requests.rebind(app.workspaces, p.root, p.id, p.session, p.confirm)
    return (Rebound if "record" in done else RebindWarning).model_validate(done)


async def attempt_diff(app: App, p: DiffParams) -> AttemptDiff:
    """The recorded diff, patch summary and completeness of an attempt."""
    return AttemptDiff.model_validate(requests.attempt_diff(app.workspaces, p.root, p.id,
                                                            p.attempt))


async def workspace_info(app: App, p: RootParams) -> WorkspaceInfo:
    """The workspace id, root and log file of a project (registered on first use)."""
    return WorkspaceInfo.model_validate(requests.workspace_info(app.workspaces, p.root))


METHODS: list[MethodSpec] = [
    MethodSpec("directives/create", CreateParams, create, "Create a directive on a region."),
    MethodSpec("directives/list", ListParams, list_directives,
               "List a workspace's directives (each row with its one-line `result`)."),
    MethodSpec("directives/get", GetParams, get,
               "A directive's record (with its one-line `result`, a DirectiveResult)."),
    MethodSpec("directives/preview", ActionParams, preview, "The exact prompt of an action."),
    MethodSpec("directives/act", ActParams, act, "Run an action as a turn."),
    MethodSpec("directives/edit", EditParams, edit, "Edit request or references."),
    MethodSpec("directives/anchor", AnchorParams, anchor, "Record the anchor's place/status."),
    MethodSpec("directives/reattach", ReattachParams, reattach, "Reattach a lost anchor."),
    MethodSpec("directives/archive", ArchiveParams, archive, "Archive or unarchive."),
    MethodSpec("directives/rebind", RebindParams, rebind, "Warned rebind to another session."),
    MethodSpec("directives/diff", DiffParams, attempt_diff, "An attempt's recorded patch."),
    MethodSpec("directives/workspace", RootParams, workspace_info, "The workspace of a root."),
]
