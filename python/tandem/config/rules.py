"""Permission rules the user keeps: allow or deny a tool for a path glob or a command prefix.

A rule lives only in the user's own settings file (``permission_rules`` of
``~/.config/tandem/settings.json``); a project's ``.tandem/settings.json``
never supplies one, trusted or not (`tandem.config.layers.resolve` drops it),
since a workspace must not loosen what is asked.

Matching is pure: `match` takes the rules, the tool, its input and the
project root, and returns the rule that decides the call (a deny before an
allow) or None. A shell-prefix rule matches only a simple command: one that
holds no shell metacharacter at all (``;``, ``&``, ``|``, backquote, ``$``,
redirections, parentheses, a newline, a backslash), so ``git status`` allows
``git status -s`` but never ``git status; rm -rf /``; and the prefix must end
on a word boundary of the parsed command.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import shlex
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

RULE_TOOLS: dict[str, str] = {"shell": "prefix", "write_file": "glob", "edit_file": "glob"}
"""The tools a rule may name, with what its pattern is: a command prefix or a path glob."""

SHELL_METACHARACTERS = frozenset(";&|`$<>()\n\r\\{}")
"""A command holding any of these is never matched by a prefix rule (always asked)."""

RuleDecision = Literal["allow", "deny"]


class PermissionRule(BaseModel):
    """One remembered answer: TOOL with PATTERN in SCOPE is DECISION, without asking."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    tool: str
    """``shell`` (PATTERN is a command prefix), ``write_file`` or ``edit_file`` (a path glob)."""
    pattern: str = Field(min_length=1, max_length=1024)
    """A command prefix (``git status``) or a glob of paths under the root (``src/*.py``;
    ``*`` crosses ``/``)."""
    scope: str | None = Field(default=None, max_length=4096)
    """The project root (absolute) the rule applies in; None: everywhere."""
    decision: RuleDecision = "allow"

    @field_validator("tool")
    @classmethod
    def _known_tool(cls, value: str) -> str:
        if value not in RULE_TOOLS:
            raise ValueError(f"unknown tool {value!r}: a rule names one of "
                             f"{', '.join(RULE_TOOLS)}")
        return value

    @field_validator("scope")
    @classmethod
    def _absolute_scope(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not os.path.isabs(value) or any(ord(c) < 32 for c in value):
            raise ValueError(f"scope {value!r} must be an absolute project root, or null "
                             "for everywhere")
        return os.path.normpath(value)

    def model_post_init(self, _context: Any) -> None:
        """Check PATTERN against what TOOL's rules match (a prefix or a glob)."""
        check_pattern(self.tool, self.pattern)

    def describe(self) -> str:
        """How the view names the rule: ``rule: shell git status (everywhere)``."""
        where = "everywhere" if self.scope is None else self.scope
        verb = "" if self.decision == "allow" else "deny "
        return f"rule: {verb}{self.tool} {self.pattern} ({where})"


def check_pattern(tool: str, pattern: str) -> None:
    """Raise ValueError with a clear sentence when PATTERN is no valid pattern for TOOL."""
    if any(ord(c) < 32 for c in pattern):
        raise ValueError("the pattern holds a control character (a newline?)")
    if RULE_TOOLS.get(tool) == "prefix":
        bad = sorted(set(pattern) & SHELL_METACHARACTERS)
        if bad:
            raise ValueError(f"a command prefix may not hold {' '.join(bad)}")
        try:
            words = shlex.split(pattern)
        except ValueError as exc:
            raise ValueError(f"the command prefix does not parse: {exc}") from None
        if not words:
            raise ValueError("the command prefix is empty")
        return
    if pattern.startswith("/") or posixpath.isabs(pattern):
        raise ValueError(f"the glob {pattern!r} must be relative to the project root")
    if ".." in pattern.split("/"):
        raise ValueError(f"the glob {pattern!r} may not hold a .. component")
    depth = 0
    for c in pattern:
        if c == "[":
            depth += 1
        elif c == "]" and depth:
            depth -= 1
    if depth:
        raise ValueError(f"the glob {pattern!r} has an unclosed [")


def command_words(command: str) -> list[str] | None:
    """COMMAND's words when it is one simple command a prefix may match; else None."""
    if not command.strip() or set(command) & SHELL_METACHARACTERS:
        return None
    try:
        return shlex.split(command)
    except ValueError:
        return None


def prefix_matches(prefix: str, command: str) -> bool:
    """Whether COMMAND is the simple command PREFIX, word for word, with more words at most."""
    words = command_words(command)
    want = shlex.split(prefix)
    return words is not None and bool(want) and words[:len(want)] == want


def glob_matches(pattern: str, path: str) -> bool:
    """Whether PATH (relative to the root, as the tool got it) matches the glob PATTERN."""
    if not path or os.path.isabs(path) or any(ord(c) < 32 for c in path):
        return False
    norm = posixpath.normpath(path.replace(os.sep, "/"))
    if norm == ".." or norm.startswith("../"):
        return False
    return fnmatch.fnmatchcase(norm, pattern)


def _same_root(scope: str | None, root: str | None) -> bool:
    if scope is None:
        return True
    if root is None:
        return False
    return os.path.realpath(scope) == os.path.realpath(root)


def rule_applies(rule: PermissionRule, tool: str, args: Mapping[str, object],
                 root: str | None) -> bool:
    """Whether RULE covers the call of TOOL with ARGS in the project ROOT."""
    if rule.tool != tool or not _same_root(rule.scope, root):
        return False
    if RULE_TOOLS[tool] == "prefix":
        command = args.get("command")
        return isinstance(command, str) and prefix_matches(rule.pattern, command)
    path = args.get("path")
    return isinstance(path, str) and glob_matches(rule.pattern, path)


def match(rules: list[PermissionRule], tool: str, args: Mapping[str, object],
          root: str | None) -> PermissionRule | None:
    """The rule that decides the call: the first deny that applies, else the first allow."""
    hits = [r for r in rules if rule_applies(r, tool, args, root)]
    return next((r for r in hits if r.decision == "deny"), hits[0] if hits else None)


def proposal(tool: str, args: Mapping[str, object]) -> str | None:
    """The pattern a question proposes for an "always" rule: the command's first two words
    (one when there is one), or the path; None when no rule can cover the call."""
    if tool not in RULE_TOOLS:
        return None
    if RULE_TOOLS[tool] == "prefix":
        words = command_words(str(args.get("command", "")))
        return shlex.join(words[:2]) if words else None
    path = args.get("path")
    return path if isinstance(path, str) and glob_matches(path, path) else None
