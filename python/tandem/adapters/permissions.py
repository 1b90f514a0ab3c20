"""Permission-rule methods (``permissions/…``): list, add and remove the user's rules.

Rules are read from and written to the user's own settings file only, through
`tandem.config.user_file` (validated, crash-safe, private).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from tandem.config.layers import read_layer, user_settings_path
from tandem.config.rules import PermissionRule
from tandem.config.user_file import save_user_settings
from tandem.protocol.base import MethodSpec, TandemError
from tandem.protocol.permissions import NoParams, RuleChanged, RuleInfo, RuleParams, RulesReply

if TYPE_CHECKING:
    from tandem.app import App


def _current() -> list[PermissionRule]:
    return list(read_layer(user_settings_path()).typed().permission_rules or [])


def _info(rules: list[PermissionRule]) -> list[RuleInfo]:
    return [RuleInfo(tool=r.tool, pattern=r.pattern, scope=r.scope, decision=r.decision,
                     description=r.describe()) for r in rules]


def _rule(p: RuleParams) -> PermissionRule:
    try:
        return PermissionRule.model_validate(p.model_dump())
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in first["loc"]) or "rule"
        msg = str(first["msg"]).removeprefix("Value error, ")
        raise TandemError("invalid", f"Permission rule: {where}: {msg}") from None


def _save(rules: list[PermissionRule]) -> str:
    plain: list[dict[str, Any]] = [r.model_dump(mode="json", exclude_defaults=True)
                                   for r in rules]
    return str(save_user_settings({"permission_rules": plain or None}))


async def list_rules(app: App, p: NoParams) -> RulesReply:
    """The user's permission rules."""
    return RulesReply(path=str(user_settings_path()), rules=_info(_current()))


async def add_rule(app: App, p: RuleParams) -> RuleChanged:
    """Add a rule to the user's settings file (validated first; a duplicate is kept once)."""
    rule = _rule(p)
    rules = _current()
    if rule in rules:
        return RuleChanged(path=str(user_settings_path()), changed=False, rules=_info(rules))
    rules.append(rule)
    return RuleChanged(path=_save(rules), changed=True, rules=_info(rules))


async def remove_rule(app: App, p: RuleParams) -> RuleChanged:
    """Remove the rule equal to P from the user's settings file."""
    rule = _rule(p)
    rules = _current()
    if rule not in rules:
        raise TandemError("not-found", f"No such permission rule: {rule.describe()}")
    rules.remove(rule)
    return RuleChanged(path=_save(rules), changed=True, rules=_info(rules))


METHODS = [
    MethodSpec("permissions/rules", NoParams, list_rules,
               "The permission rules of the user's settings file.", RulesReply),
    MethodSpec("permissions/add-rule", RuleParams, add_rule,
               "Add a permission rule to the user's settings file.", RuleChanged),
    MethodSpec("permissions/remove-rule", RuleParams, remove_rule,
               "Remove a permission rule from the user's settings file.", RuleChanged),
]
