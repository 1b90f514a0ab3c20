"""Run one tool call of the model: validate, decide permission, execute, report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import ValidationError

from tandem.config.rules import PermissionRule
from tandem.config.rules import match as match_rule
from tandem.tools.base import INVALID_INPUT, Tool, ToolArgs, ToolContext, ToolError
from tandem.tools.edit import EDIT_TOOLS, EditArgs, WriteArgs, write_edited
from tandem.tools.files import READ_TOOLS
from tandem.tools.instruments import EDITOR_TOOLS
from tandem.tools.paths import resolve_in_root
from tandem.tools.permissions import GRANTS, SessionGrants, decide, user_rules
from tandem.tools.protected import check as protected_check
from tandem.tools.protected import mentioned, question
from tandem.tools.shell import SHELL_TOOLS
from tandem.tools.types import EDITABLE_TOOLS, PermissionRequest, ToolSink, ToolTurn


def default_tools() -> list[Tool]:
    """Every native tool: read (files, then the editor's), edit and execute capabilities."""
    return [*READ_TOOLS, *EDITOR_TOOLS, *EDIT_TOOLS, *SHELL_TOOLS]


@dataclass
class ToolOutcome:
    """What goes back to the model for one call."""

    call_id: str
    name: str
    status: str
    """``completed``, ``failed`` or ``refused``."""
    output: str

    @property
    def is_error(self) -> bool:
        """Whether the model should see this result as an error."""
        return self.status != "completed"


class ToolExecutor:
    """Runs the model's tool calls for one turn, asking the user when the mode says so.

    The permission check happens here, in the executor, so a model cannot get
    around read-only mode whatever it asks for.
    """

    def __init__(
        self,
        request: ToolTurn,
        sink: ToolSink,
        ctx: ToolContext,
        tools: list[Tool] | None = None,
        grants: SessionGrants | None = None,
        scrub: Callable[[str], str] | None = None,
        rules: Callable[[], list[PermissionRule]] | None = None,
    ) -> None:
        self.request = request
        self.sink = sink
        self.ctx = ctx
        self.tools = {t.name: t for t in (tools if tools is not None else default_tools())}
        self.grants = grants if grants is not None else GRANTS
        self.scrub = scrub or (lambda text: text)
        """Masks secrets (the API key) in what a tool returns."""
        self.rules = rules or user_rules
        """The user's permission rules, read at each call (a rule added mid-turn applies)."""

    def specs(self) -> list[Tool]:
        """The tools offered to the model."""
        return list(self.tools.values())

    async def run(self, call_id: str, name: str, raw_input: Any) -> ToolOutcome:
        """Report, check and run one call; never raises for the model's mistakes."""
        tool = self.tools.get(name)
        input_dict = raw_input if isinstance(raw_input, dict) else {"_raw": raw_input}
        if tool is None:
            self.sink.tool_call(call_id, name, "other", name, input_dict)
            return self._done(call_id, name, "failed", f"unknown tool {name!r}")
        if INVALID_INPUT in input_dict:  # the provider could not accept the input
            self.sink.tool_call(call_id, name, tool.kind, name, input_dict)
            msg = f"invalid arguments for {name}: {input_dict[INVALID_INPUT]}"
            return self._done(call_id, name, "failed", msg)
        try:
            args = tool.args.model_validate(input_dict)
            title = tool.title(args)
        except ValidationError as exc:
            self.sink.tool_call(call_id, name, tool.kind, name, input_dict)
            msg = f"invalid arguments for {name}: {_short_errors(exc)}"
            return self._done(call_id, name, "failed", msg)
        decision = decide(
            tool.kind,
            self.request.permission_mode,
            self.request.read_only,
            self.grants.granted(self.request.session_id, name),
        )
        rule = None
        if decision != "refuse":
            # A rule never loosens the read-only ceiling; a deny tightens any mode.
            rule = match_rule(self.rules(), name, args.model_dump(), str(self.ctx.root))
        decided_by = rule.describe() if rule is not None else None
        self.sink.tool_call(call_id, name, tool.kind, title, input_dict, decided_by=decided_by)
        if decision == "refuse":
            why = (
                "this is a read-only (discussion) request"
                if self.request.read_only
                else "the permission mode is read-only"
            )
            return self._done(
                call_id, name, "refused", f"Refused: {why}; {name} ({tool.kind}) is not allowed."
            )
        if rule is not None and rule.decision == "deny":
            return self._done(call_id, name, "refused",
                              f"Refused by the user's {rule.describe()}; it did not run.")
        if rule is not None:
            decision = "allow"
        reason, protected = await self._protected(tool, args)
        if reason is not None:
            # Always asked, whatever the mode, a rule or an earlier "allow for this session".
            decision = "ask"
            title = question(title, reason)
        edited: str | None = None
        if decision == "ask":
            asked = PermissionRequest(
                call_id=call_id, tool=name, kind=tool.kind, title=title, input=input_dict,
                once_only=reason is not None,
                editable=reason is None and name in EDITABLE_TOOLS,
            )
            answer = await self.sink.ask_permission(asked)
            if answer not in ("allow_once", "allow_session"):
                # Anything but an explicit allow (reject, a dismissed prompt) refuses.
                why = f" ({reason})" if reason else ""
                said = asked.reply.reason if asked.reply is not None else None
                told = f" The user's reason: {said}" if said else ""
                return self._done(
                    call_id, name, "refused",
                    f"The user rejected this tool call{why}; it did not run.{told}")
            if answer == "allow_session" and reason is None:
                self.grants.grant(self.request.session_id, name)
            if asked.reply is not None and isinstance(args, EditArgs | WriteArgs):
                edited = asked.reply.content
        # A user-edited change carries no protected-path approval: the guard decides.
        self.ctx.approved = set(protected) if edited is None else set()
        try:
            if edited is not None and isinstance(args, EditArgs | WriteArgs):
                output = await write_edited(self.ctx, name, args, edited)
            else:
                output = await tool.run(self.ctx, args)
        except ToolError as exc:
            return self._done(call_id, name, "failed", str(exc))
        except OSError as exc:
            return self._done(call_id, name, "failed", f"{name}: {exc.strerror or exc}")
        finally:
            self.ctx.approved = set()
        return self._done(call_id, name, "completed", output)

    async def _protected(self, tool: Tool, args: ToolArgs) -> tuple[str | None, list[Path]]:
        """Why the call writes a protected path (None: it does not), and those paths."""
        command = getattr(args, "command", None)
        if tool.kind == "execute" and isinstance(command, str):
            return mentioned(command, self.request.protected_paths), []
        if tool.writes is None or tool.kind == "read":
            return None, []
        root, entries = self.ctx.root, self.request.protected_paths

        def look() -> tuple[str | None, list[Path]]:
            first: str | None = None
            found: list[Path] = []
            for path in tool.writes(args) if tool.writes else []:
                try:
                    real = resolve_in_root(root, path)
                except ToolError:
                    continue  # the tool refuses it with its own sentence
                reason = protected_check(root, path, real, entries)
                if reason is not None:
                    first = first or reason
                    found.append(real)
            return first, found

        return await anyio.to_thread.run_sync(look)

    def _done(self, call_id: str, name: str, status: str, output: str) -> ToolOutcome:
        output = self.scrub(output)
        self.sink.tool_result(call_id, status, output)
        return ToolOutcome(call_id, name, status, output)


def _short_errors(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
    )
