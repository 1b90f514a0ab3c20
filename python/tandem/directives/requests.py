"""What the directive methods ask of the workspace service, as the front end sees it.

Every request names the workspace by its project ``root`` (mapped to the
workspace id through the registry) and a directive by its short id
(``D7``). Records come back as plain dicts: Emacs sees plists.
"""

from __future__ import annotations

from tandem.directives.actions import available
from tandem.directives.flow import act as act_flow
from tandem.directives.flow import instructions_of, prepare
from tandem.directives.models import DirectiveState
from tandem.directives.service import Workspace, WorkspaceService
from tandem.mentions.sources import relative_path
from tandem.protocol.base import TandemError
from tandem.protocol.directives import Anchor, AnchorStatus, Reference, SystemDirective


def record(ws: Workspace, state: DirectiveState, diffs: bool = False) -> dict[str, object]:
    """The directive record as the front end sees it (diffs only when asked)."""
    data = state.model_dump(mode="json")
    if not diffs:
        for a in data["attempts"]:
            a["diff_chars"] = len(a.pop("diff", "") or "")
    data.update(actions=available(state), workspace=ws.id, root=str(ws.root))
    return data


def summary(state: DirectiveState) -> dict[str, object]:
    """One row of the directive list."""
    return {"id": state.id, "state": state.state, "request": state.request,
            "request_changed": state.request_changed, "path": state.anchor.path,
            "start_line": state.anchor.start_line, "end_line": state.anchor.end_line,
            "anchor_status": state.anchor.status, "anchor_text": state.anchor.text,
            "attempts": len(state.attempts), "discussion": len(state.discussion),
            "session": state.session, "archived": state.archived,
            "actions": available(state),
            "result": state.result.model_dump() if state.result else None}


def create(svc: WorkspaceService, root: str, path: str, start_line: int, end_line: int,
           text: str, request: str, references: list[Reference]) -> dict[str, object]:
    """Create a directive (registering ROOT's workspace on first use); its record."""
    ws = svc.open(root)
    return record(ws, svc.create(ws, path, start_line, end_line, text, request, references))


def rows(svc: WorkspaceService, root: str, archived: bool) -> list[dict[str, object]]:
    """ROOT's directive rows, oldest first ([] for a root with no workspace yet)."""
    if svc.registry.lookup(root) is None:
        return []
    ws = svc.open(root)
    return [summary(s) for s in svc.states(ws).values() if archived or not s.archived]


def get(svc: WorkspaceService, root: str, directive: str, diffs: bool) -> dict[str, object]:
    """DIRECTIVE's record: id state request session attempts discussion anchor actions…"""
    ws = svc.open(root, create=False)
    return record(ws, svc.get(ws, directive), diffs)


def preview(svc: WorkspaceService, root: str, directive: str, action: str, text: str,
            attempt: int | None, system: SystemDirective | None) -> dict[str, object]:
    """The exact prompt ACTION would send now (nothing is sent or written)."""
    ws = svc.open(root, create=False)
    prep = prepare(ws, svc.get(ws, directive), action, text, attempt, system,
                   instructions_of(svc, ws))
    return {"prompt": prep.prompt, "system": prep.system.model_dump(),
            "attempt": prep.based_on.seq if prep.based_on else None,
            "read_only": action in ("discuss", "discuss-result")}


async def act(svc: WorkspaceService, root: str, directive: str, action: str, text: str,
              attempt: int | None, provider: str | None, model: str, session: str | None,
              permission_mode: str | None, system: SystemDirective | None) -> dict[str, object]:
    """Start ACTION as a turn of the bound session; its identity (session, turn, attempt)."""
    ws = svc.open(root, create=False)
    return await act_flow(svc, ws, directive, action, text, attempt, provider, model,
                          session, permission_mode, system)


def edit(svc: WorkspaceService, root: str, directive: str, request: str | None,
         references: list[Reference] | None) -> dict[str, object]:
    """Change the request (back to Ready) and/or the references; earlier activity is kept."""
    ws = svc.open(root, create=False)
    return record(ws, svc.edit(ws, directive, request, references))


def move_anchor(svc: WorkspaceService, root: str, directive: str, path: str, start_line: int,
                end_line: int, text: str, status: AnchorStatus) -> dict[str, object]:
    """Record the anchor's new place or status, as Emacs sees it."""
    ws = svc.open(root, create=False)
    try:
        a = Anchor(path=_relative(ws, path), start_line=start_line, end_line=end_line,
                   text=text, status=status)
    except ValueError as exc:
        raise TandemError("invalid", f"Bad anchor: {exc}") from None
    return record(ws, svc.update_anchor(ws, directive, a))


def _relative(ws: Workspace, path: str) -> str:
    """PATH relative to the workspace root (a clear error outside it)."""
    try:
        return relative_path(ws.root, path)
    except ValueError as exc:
        raise TandemError("invalid", str(exc)) from None


def reattach(svc: WorkspaceService, root: str, directive: str, start_line: int | None,
             end_line: int | None) -> dict[str, object]:
    """Reattach a detached or source-missing directive."""
    ws = svc.open(root, create=False)
    return record(ws, svc.reattach(ws, directive, start_line, end_line))


def archive(svc: WorkspaceService, root: str, directive: str, archived: bool) -> dict[str, object]:
    """Archive or unarchive; nothing is deleted."""
    ws = svc.open(root, create=False)
    return record(ws, svc.archive(ws, directive, archived))


def rebind(svc: WorkspaceService, root: str, directive: str, session: str,
           confirm: bool) -> dict[str, object]:
    """Warn, then (with CONFIRM) rebind to SESSION; earlier attempt links are unchanged."""
    ws = svc.open(root, create=False)
    state = svc.get(ws, directive)
    try:
        journal = svc.sessions.journal(session)
    except TandemError as exc:
        raise TandemError("unavailable", f"Cannot rebind to {session}: {exc.message}") from None
    if state.session == journal.id:
        raise TandemError("invalid", f"{directive} is already bound to {journal.id}")
    warning = svc.rebind_warning(state, journal.id)
    if not confirm:
        return {"confirmed": False, "warning": warning, "session": journal.id}
    svc.bind(ws, directive, journal.id, rebind=True)
    return {"confirmed": True, "warning": warning, "session": journal.id,
            "record": record(ws, svc.get(ws, directive))}


def attempt_diff(svc: WorkspaceService, root: str, directive: str,
                 attempt: int) -> dict[str, object]:
    """The recorded diff, patch summary and completeness of ATTEMPT."""
    ws = svc.open(root, create=False)
    for a in svc.get(ws, directive).attempts:
        if a.seq == attempt:
            return {"diff": a.diff, "patch": a.patch, "completeness": a.completeness,
                    "session": a.session, "turn": a.turn, "checkpoint": a.checkpoint}
    raise TandemError("not-found", f"{directive} has no surviving attempt {attempt}")


def workspace_info(svc: WorkspaceService, root: str) -> dict[str, object]:
    """The workspace id, root and log file of ROOT (registered on first use)."""
    ws = svc.open(root)
    return {"id": ws.id, "root": str(ws.root), "log": str(ws.log.path),
            "notices": ws.log.notices}
