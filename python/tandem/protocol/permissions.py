"""Params and replies of the permission-rule methods (``permissions/…``).

A rule is kept in the user's own settings file only (`tandem.config.rules`);
these methods list, add and remove them there.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tandem.protocol.base import Params, Reply


class RuleParams(Params):
    """One rule: TOOL with PATTERN, in the project SCOPE (absolute root) or everywhere (null)."""

    tool: str = Field(min_length=1, max_length=64)
    """``shell`` (a command prefix), ``write_file`` or ``edit_file`` (a path glob)."""
    pattern: str = Field(min_length=1, max_length=1024)
    scope: str | None = Field(default=None, max_length=4096)
    decision: Literal["allow", "deny"] = "allow"


class NoParams(Params):
    """No parameters."""


class RuleInfo(Reply):
    """One rule as kept, with how the view names it."""

    tool: str
    pattern: str
    scope: str | None = None
    decision: Literal["allow", "deny"]
    description: str
    """``rule: shell git status (everywhere)``: what a decided call's row shows."""


class RulesReply(Reply):
    """Every rule of the user's settings file, in order, and that file."""

    path: str
    rules: list[RuleInfo]


class RuleChanged(Reply):
    """The rules after an add or a remove; CHANGED is false when nothing had to change."""

    path: str
    changed: bool
    rules: list[RuleInfo]
